"""Reading run folders (written by minipods.train): metrics rows, configs, per-question evaluations,
a study for minipods.analysis.summary (`read_study`), each arm's costs (`summarize`) and the update
re-pricing (docs/training.md). No torch."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from minipods.stats import mean_interval
from minipods.analysis.summary import Point
from minipods.checkpoint import RunError, eval_path, eval_steps, read_log

COMPARISON_FILE = "comparison.json"  # written by minipods.compare: arm order, baseline, seeds
DONE = "DONE"  # written by minipods.compare in a finished arm's folder: its last step and machine
NOT_DESIGN = ("seed", "output_dir", "data_dir", "data_source", "resume", "progress")  # config.json's non-design keys


def read_rows(run_dir: str | Path) -> list[dict]:
    return read_log(Path(run_dir) / "metrics.jsonl")


def read_json(path: str | Path) -> dict:
    """A JSON file ({} when there is none); a damaged one raises RunError naming it."""
    try:
        return json.loads(Path(path).read_text()) if Path(path).is_file() else {}
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise RunError(f"{path} is not valid JSON (a damaged file)") from None


def read_config(run_dir: str | Path) -> dict:
    return read_json(Path(run_dir) / "config.json")


def read_eval(run_dir: str | Path, step: int) -> list[dict]:
    """The per-question rows ({index, gold, pred, correct}) of the evaluation after `step`."""
    return read_log(eval_path(run_dir, step), drop_torn_tail=False)


def final_eval(run_dir: str | Path) -> list[dict]:
    """Per-question rows of a run's last evaluation ([] when it has none)."""
    steps = eval_steps(run_dir)
    return read_eval(run_dir, steps[-1]) if steps else []


def training_rows(rows: list[dict]) -> list[dict]:
    """Rows of training steps (the step-0 evaluation row has no step_s)."""
    return [r for r in rows if "step_s" in r]


def read_points(run_dir: str | Path) -> list[Point]:
    """A run's evaluations as Points in time order (`correct` where the evaluation file was kept)."""
    kept, pts = set(eval_steps(run_dir)), []
    for r in read_rows(run_dir):
        if r.get("eval_accuracy") is None:
            continue
        step = int(r["step"])
        correct = {q["index"]: int(q["correct"]) for q in read_eval(run_dir, step)} if step in kept else None
        pts.append(Point(float(r.get("elapsed_s", 0.0)), step, float(r["eval_accuracy"]), r.get("eval_n"), correct))
    return sorted(pts, key=lambda p: (p.seconds, p.step))


def read_done(run_dir: str | Path) -> dict:
    return read_json(Path(run_dir) / DONE)


def machine(dirs: dict[str, Path]) -> dict:
    """A seed's machine from its arms' DONE files: name ("CPU, T threads"; one per arm when they differ)
    and gflops (the arms' mean fp32 matmul probe, None without one)."""
    done = [read_done(d) for d in dirs.values()]
    names = dict.fromkeys(f"{x.get('cpu', '?')}, " + (f"{x['threads']} threads" if "threads" in x else
                                                     "threads not recorded") for x in done)
    probes = [x["probe"]["fp32_tflops"] * 1e3 for x in done if x.get("probe")]
    return {"name": " / ".join(names), "gflops": sum(probes) / len(probes) if probes else None}


def fingerprint(configs: dict[str, dict]) -> str:
    """The design of a seed's arms (arm -> config.json): a hash of every setting but the seed and the paths."""
    design = {a: {k: v for k, v in c.items() if k not in NOT_DESIGN} for a, c in sorted(configs.items())}
    return hashlib.sha256(json.dumps(design, sort_keys=True).encode()).hexdigest()[:12]


def read_study(seed_dirs: dict[int, dict[str, Path]]) -> dict[int, dict[str, list[Point]]]:
    return {s: {a: pts for a, d in dirs.items() if (pts := read_points(d))} for s, dirs in seed_dirs.items()}


def seed_folder(folder: str | Path, meta: dict, seed: int) -> Path:
    """A study's seed folder: FOLDER/seed{s} (`compare --seeds`), or the hand-in a merge lists (relative to FOLDER)."""
    return Path(folder) / next((h["folder"] for h in meta.get("hand_ins", []) if h["seed"] == seed), f"seed{seed}")


def seed_dirs(folder: str | Path, meta: dict) -> dict[int, dict[str, Path]]:
    """A study (meta: its comparison.json; runs in seed_folder(...)/ARM): seed -> arm -> run folder."""
    dirs = {s: {a: seed_folder(folder, meta, s) / a for a in meta["arms"]} for s in meta["seeds"]}
    return {s: {a: d for a, d in by.items() if (d / "metrics.jsonl").is_file()} for s, by in dirs.items()}


def summarize(runs: dict[str, list[dict]]) -> list[dict]:
    """Per arm (in the order of `runs`), its cost and accuracy numbers from its metrics rows."""
    out = []
    for name, rows in runs.items():
        tr = training_rows(rows)
        accs = [r["eval_accuracy"] for r in rows if r.get("eval_accuracy") is not None]
        out.append({"arm": name, "steps": max((int(r["step"]) for r in tr), default=0),
                    "train_s": max((float(r["elapsed_s"]) for r in tr), default=0.0),
                    "peak_accuracy": max(accs, default=None), "final_accuracy": accs[-1] if accs else None,
                    **{k: mean_interval([r.get(c) for r in tr])["mean"] for k, c in (
                        ("mean_step_s", "step_s"), ("mean_rollout_s", "rollout_s"), ("mean_update_s", "update_s"),
                        ("zero_std_frac", "zero_std_frac"), ("mean_reward", "reward_mean"),
                        ("mean_kept_reward", "kept_reward_mean"))},
                    "peak_mem_mb": max((float(r["peak_mem_mb"]) for r in tr if r.get("peak_mem_mb") is not None),
                                       default=None)})
    return out


def repriced_seconds(rows: list[dict], ran: str, to: str) -> dict[int, float]:
    """step -> elapsed_s had the update paid `to` instead of `ran`, update seconds scaled by the rows
    processed (the rule: docs/training.md)."""
    def paid(r: dict, pricing: str) -> int:  # rows that pricing's update processes
        return r["kept_rows"] - r["silent_rows"] if pricing == "skip_silent" else r["kept_rows"]
    tr = training_rows(rows)
    per_row = sum(r["update_s"] for r in tr) / max(sum(max(paid(r, ran), 1) for r in tr), 1)
    out, shift = {0: 0.0}, 0.0
    for r in tr:
        done, other = paid(r, ran), max(paid(r, to), 1)  # skip_silent runs at least one row
        shift += (r["update_s"] * other / done if done else per_row * other) - r["update_s"]
        out[int(r["step"])] = float(r["elapsed_s"]) + shift
    return out


def repriced_study(study: dict, rows: dict, configs: dict[str, dict]) -> tuple[str, dict | str]:
    """The other pricing and the study's seconds under it (rows: seed -> arm -> metrics rows), or why there are none."""
    ran = {a: configs[a]["update_pricing"] for by in study.values() for a in by}
    to = "skip_silent" if set(ran.values()) == {"every_row"} else "every_row"
    out: dict = {}
    for s, arms in study.items():
        for a, pts in arms.items():
            secs = {p.step: p.seconds for p in pts} if ran[a] == to else repriced_seconds(rows[s][a], ran[a], to)
            if to == "skip_silent" and configs.get(a, {}).get("beta"):
                return to, f"`{a}` ran with beta {configs[a]['beta']}, where leaving silent rows out is not exact"
            out.setdefault(s, {})[a] = [p._replace(seconds=secs[p.step]) for p in pts]
    return to, out


def find_runs(paths: list[str | Path]) -> tuple[dict[str, Path], Path, dict]:
    """Arm name -> run folder (paths: run folders or folders of them, in comparison.json's order), where
    files go (the one path given, None for several; never a run's parent, which in a study holds that
    seed's summary) and comparison.json (or {})."""
    runs, meta = {}, {}  # arm -> run folder, comparison.json
    for p in map(Path, paths):
        if not p.is_dir():
            raise FileNotFoundError(f"{p}: not a folder")
        is_run = (p / "metrics.jsonl").is_file()
        sub = [p] if is_run else sorted(d for d in p.iterdir() if (d / "metrics.jsonl").is_file())
        if not sub:
            raise FileNotFoundError(f"{p}: neither a run folder (metrics.jsonl) nor a folder of run folders")
        if not is_run and (p / COMPARISON_FILE).is_file():
            meta = json.loads((p / COMPARISON_FILE).read_text())
            order = {a: i for i, a in enumerate(meta.get("arms", []))}
            sub.sort(key=lambda d: (order.get(d.name, len(order)), d.name))
        for d in sub:
            runs[d.name if d.name not in runs else f"{d.parent.name}/{d.name}"] = d
    return runs, (Path(paths[0]) if len(paths) == 1 else None), meta
