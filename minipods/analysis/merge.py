"""`python -m minipods.compare --merge DIR... --output-dir OUT`: seed folders (`compare --seed S`, a student's hand-in)
and studies (`compare --seeds`, an earlier merge) as one study, summarised as `compare --seeds` does; its runs stay
where they are (comparison.json's hand_ins). Refused before anything is written: another design (results.fingerprint) or
plan (comparison.json), a seed twice, a copy of another hand-in, a pilot seed, a missing or unfinished arm, a damaged or
edited file (`check_arm` re-derives every number), a seed's arms from two machines (docs/class_study.md)."""

from __future__ import annotations

import hashlib
import json
import math
import os
import shutil
import tempfile
from pathlib import Path

from minipods.analysis import plots, results
from minipods.checkpoint import RunError, eval_path, prepare_output_dir
from minipods.rewards import correctness_reward

PILOT_SEEDS = {"class": (100, 101)}  # preset -> the seeds its plan reserves for pilots: never part of its study


def seed_folders(dirs: list) -> list[Path]:
    """The seed folders of DIR... (a study: its seed{s} folders; a seed folder: itself), in the given order."""
    out = []
    for d in map(Path, dirs):
        if seeds := (meta := results.read_json(d / results.COMPARISON_FILE)).get("seeds"):
            out += [results.seed_folder(d, meta, s) for s in seeds]
        elif d.is_dir() and any((a / "config.json").is_file() for a in d.iterdir()):
            out.append(d)
        else:
            raise ValueError(f"{d}: neither a seed folder (one folder per arm, as compare writes it) nor a study")
    return out


def check_arm(d: Path, cfg: dict, done: dict) -> tuple[list, str]:
    """A finished arm, every number re-derived from its files (each question re-graded from its pred and gold):
    (its evaluation questions, a hash of its training rows but their timings); RunError names the failed check."""
    def need(ok, what: str):
        if not ok:
            raise RunError(f"{d}: {what} (an edited or damaged hand-in)")
    rows, qs, t = results.read_rows(d), None, 0.0
    tr = results.training_rows(rows)
    for r in rows:
        bad = [k for k, v in r.items() if (k.endswith("_s") or k.startswith("eval_")) and not (isinstance(
            v, (int, float)) and math.isfinite(v) and 0 <= v <= (1 if k.endswith(("accuracy", "rate")) else math.inf))]
        need(not bad, f"step {r.get('step')}'s {bad and bad[0]} is {bad and r[bad[0]]}, not a finite value in range")
        if r.get("eval_accuracy") is not None:
            need(eval_path(d, r["step"]).is_file(), f"no per-question file for the step-{r['step']} evaluation")
            ev = results.read_eval(d, r["step"])
            need(all(q["correct"] == correctness_reward(q["pred"], q["gold"]) for q in ev), f"eval/step_{r['step']:05d}.jsonl "
                 "marks an answer correct that the grader does not (or the reverse)")
            need(len(ev) == r["eval_n"] and all(math.isclose(sum(q[k] for q in ev) / max(len(ev), 1), r[f"eval_{a}"], abs_tol=1e-9)
                 for k, a in (("correct", "accuracy"), ("strict", "strict_accuracy"))),
                 f"step {r['step']}'s evaluation in metrics.jsonl differs from eval/step_{r['step']:05d}.jsonl")
            need(qs in (None, got := [(q["index"], q["gold"]) for q in ev]), "its evaluations ask different questions")
            qs = got
    for i, r in enumerate(tr, 1):
        t += r["step_s"]
        need(r["step"] == i and math.isclose(t, r["elapsed_s"], abs_tol=1e-3), f"step {r['step']}'s elapsed_s is not the sum of its step_s")
    last = tr[-1] if tr else {"step": 0, "elapsed_s": 0.0}
    need((done.get("step"), done.get("elapsed_s")) == (last["step"], last["elapsed_s"]), f"{results.DONE} differs from metrics.jsonl's last step")
    budget = cfg.get("budget_s") or 0
    need(last["step"] >= cfg["max_steps"] or 0 < budget <= last["elapsed_s"], f"training stopped at step {last['step']}, "
         f"{last['elapsed_s']:.0f} s, short of the design's {budget or cfg['max_steps']} {'s' if budget else 'steps'}")
    return qs or [], hashlib.sha256(json.dumps([{k: v for k, v in r.items() if k != "seed" and not k.endswith("_s")}
                                               for r in rows]).encode()).hexdigest()


def check_seed(folder: Path) -> dict:
    """One seed folder, read whole and checked: seed, meta (comparison.json), dirs (arm -> folder), fingerprint
    (its design), content (a hash of its arms' training rows), plan (comparison.json but the seed and paths)."""
    meta = results.read_json(folder / results.COMPARISON_FILE)
    dirs = {a: folder / a for a in meta.get("arms") or sorted(a.name for a in folder.iterdir() if (a / "config.json").is_file())}
    configs, machines, arms = {}, set(), {}
    for a, d in dirs.items():
        if not (d / "config.json").is_file():
            raise ValueError(f"{folder} lacks arm {a} (no {a}/config.json): a seed needs every arm of the design")
        configs[a], done = results.read_config(d), results.read_done(d)
        if not done:
            raise ValueError(f"{d} has not finished (no {results.DONE}): run its compare command again to finish it")
        try:
            arms[a] = check_arm(d, configs[a], done)
        except (KeyError, TypeError, AttributeError) as e:
            raise RunError(f"{d}: a damaged file (a row without {e})") from None
        machines.add((done.get("cpu"), done.get("threads"), done.get("host")))
    if len({json.dumps(q) for q, _ in arms.values()}) > 1:
        raise RunError(f"{folder}: its arms were evaluated on different questions (an edited or damaged hand-in)")
    if len(seeds := {c.get("seed") for c in configs.values()}) != 1:
        raise ValueError(f"{folder}: its arms ran different seeds ({', '.join(sorted(map(str, seeds)))})")
    if len(machines) > 1:
        raise ValueError(f"{folder}: its arms ran on different machines ({', '.join(sorted(str(m[0]) for m in machines))}"
                         "); a seed's arms are compared in wall-clock, so run them on one")
    return {"seed": seeds.pop(), "meta": meta, "dirs": dirs, "fingerprint": results.fingerprint(configs), "folder": folder,
            "content": hashlib.sha256("".join(h for _, h in arms.values()).encode()).hexdigest()[:12],  # and the plan:
            "plan": {**meta, "overrides": {k: v for k, v in meta.get("overrides", {}).items() if k not in results.NOT_DESIGN}}}


def check(dirs: list) -> dict[int, dict]:
    """seed -> check_seed of every seed folder of DIR..., in seed order; ValueError where they are not one study."""
    by_seed: dict[int, dict] = {}
    for x in map(check_seed, seed_folders(dirs)):
        first = next(iter(by_seed.values()), x)
        if x["seed"] in by_seed:
            raise ValueError(f"seed {x['seed']} twice: {by_seed[x['seed']]['folder']} and {x['folder']}")
        if odd := [a for a in first["dirs"] if a not in x["dirs"]] or [a for a in x["dirs"] if a not in first["dirs"]]:
            raise ValueError(f"seed {x['seed']} ({x['folder']}) and seed {first['seed']} ({first['folder']}) differ in "
                             f"arm {odd[0]}: a seed missing an arm")
        if x["fingerprint"] != first["fingerprint"]:
            raise ValueError(f"{x['folder']} has another design than {first['folder']} (fingerprint {x['fingerprint']} vs "
                             f"{first['fingerprint']}: a setting other than the seed differs)")
        if odd := sorted(k for k in x["plan"].keys() | first["plan"].keys() if x["plan"].get(k) != first["plan"].get(k)):
            raise ValueError(f"{x['folder']} has another plan than {first['folder']} (comparison.json's {odd[0]} differs)")
        if copy := next((y for y in by_seed.values() if y["content"] == x["content"]), None):
            raise ValueError(f"{x['folder']} (seed {x['seed']}) is a copy of {copy['folder']} (seed {copy['seed']}): the same "
                             f"training rows (content {x['content']}); each hand-in must be its own run")
        by_seed[x["seed"]] = x
    pilots = PILOT_SEEDS.get(next(iter(by_seed.values()))["meta"].get("preset"), ())
    if 0 < len(mixed := [s for s in by_seed if s in pilots]) < len(by_seed):
        raise ValueError(f"{by_seed[mixed[0]]['folder']}: seed {mixed[0]} is a pilot seed (the plan reserves "
                         f"{', '.join(map(str, pilots))} for pilots), never part of a study")
    return dict(sorted(by_seed.items()))


def merge(dirs: list, out: str | Path, log=print) -> Path:
    """check(DIR...), then OUT (new or empty) written aside and renamed: an interrupted merge leaves nothing."""
    by_seed, out = check(dirs), Path(out)
    if inside := next((d for d in map(Path, dirs) if out.resolve().is_relative_to(d.resolve())), None):
        raise ValueError(f"{out} is inside the input {inside}: merge into a folder outside every hand-in")
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise ValueError(f"{out} exists and is not an empty folder: merge into a new --output-dir")
    first = next(iter(by_seed.values()))
    meta = {"seeds": list(by_seed), **{k: v for k, v in first["meta"].items() if k in ("baseline", "preset", "primary")},
            "arms": list(first["dirs"]), "fingerprint": first["fingerprint"], "merged_from": list(map(str, dirs)),
            "hand_ins": [{"seed": s, "folder": os.path.relpath(x["folder"].resolve(), out.resolve()), "content": x["content"]}
                         for s, x in by_seed.items()]}  # the runs stay in the hand-ins: a study stores each once
    tmp = Path(tempfile.mkdtemp(dir=prepare_output_dir(out.absolute().parent), prefix=f".{out.name}."))
    try:
        (tmp / results.COMPARISON_FILE).write_text(json.dumps(meta, indent=1))
        plots.make(results.seed_dirs(tmp, meta), tmp, meta)  # tmp: beside out
        os.replace(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    log(f"merged {len(by_seed)} seeds ({', '.join(map(str, by_seed))}) into {out}")
    return out
