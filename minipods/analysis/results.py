"""Reading run folders, and the statistics of a comparison: no torch, no figures.

    rows = read_rows("runs/compare/grpo")          # a run's metrics.jsonl rows
    summary = summarize({"grpo": rows_a, "pods_max_variance": rows_b})

Paper (Section 5, Figure 1): the headline number is the time each method needs to reach 99% of
vanilla GRPO's peak test accuracy (`summarize`: time_to_target_s, speedup). Accuracies carry a
95% Wilson interval (`wilson_interval`); two accuracies on the same questions (the first and last
evaluation of a run, two arms of one seed) are compared with `paired_difference` (Newcombe's
paired score interval and the exact McNemar p-value); `summarize(runs)` is a pure function of the metric rows;
`write_summary` writes summary.md / summary.csv. Several seeds (`compare --seeds`) live in
minipods.analysis.seeds: `summarize_seeds` gives each arm's mean and 95% interval across seeds,
`learning_by_seed` each arm's first-vs-final change per seed and pooled, `paired_against` the paired
difference of pods_max_variance against each other arm on the same questions, `write_seed_summary`
the files. The intervals themselves live in minipods.analysis.stats; the metrics and per-question
files are written (and read back) by minipods.checkpoint. minipods.analysis.plots draws from these.
"""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

from minipods.analysis.stats import paired_difference
from minipods.checkpoint import eval_path, eval_steps, read_log


BASELINE = "grpo"  # the arm whose peak accuracy defines the target (paper: vanilla GRPO)
TARGET_FRAC = 0.99  # paper: time to reach 99% of GRPO's peak test accuracy
COMPARISON_FILE = "comparison.json"  # written by minipods.compare: arm order, baseline, sweep


# ---------------------------------------------------------------- reading runs
def read_rows(run_dir: str | Path) -> list[dict]:
    """The metric rows of a run folder (OUTPUT_DIR/metrics.jsonl; [] when there is none)."""
    return read_log(Path(run_dir) / "metrics.jsonl")


def read_config(run_dir: str | Path) -> dict:
    path = Path(run_dir) / "config.json"
    return json.loads(path.read_text()) if path.is_file() else {}


def read_eval(run_dir: str | Path, step: int) -> list[dict]:
    """The per-question rows ({index, gold, pred, correct}) of the evaluation after `step`."""
    return read_log(eval_path(run_dir, step), drop_torn_tail=False)


def final_eval(run_dir: str | Path) -> list[dict]:
    """Per-question rows of a run's last evaluation ([] when it has none)."""
    steps = eval_steps(run_dir)
    return read_eval(run_dir, steps[-1]) if steps else []


def matched_correct(rows_a: list[dict], rows_b: list[dict]) -> tuple[list[int], list[int]]:
    """The `correct` columns of two per-question evaluations, matched by question index (in a's
    order); questions that only one of them has are left out."""
    b = {r["index"]: r["correct"] for r in rows_b}
    both = [(r["correct"], b[r["index"]]) for r in rows_a if r["index"] in b]
    return [x for x, _ in both], [y for _, y in both]


def first_last_correct(run_dir: str | Path) -> tuple[list[int], list[int], int, int] | None:
    """0/1 per question of a run's first and last evaluation (matched by question), with their steps;
    None with fewer than two evaluation files."""
    steps = eval_steps(run_dir)
    if len(steps) < 2:
        return None
    return (*matched_correct(read_eval(run_dir, steps[0]), read_eval(run_dir, steps[-1])), steps[0], steps[-1])


def change_of(fl: tuple[list[int], list[int], int, int] | None) -> dict | None:
    return None if fl is None else {**paired_difference(fl[0], fl[1]), "first_step": fl[2], "last_step": fl[3]}


def learning_change(run_dir: str | Path) -> dict | None:
    """First (step 0) vs. last evaluation of a run on the same questions: paired_difference plus
    first_step/last_step; None with fewer than two evaluation files."""
    return change_of(first_last_correct(run_dir))


def format_change(ch: dict) -> str:
    """`eval accuracy A% -> B% (+D points, paired 95% CI [lo, hi], N questions)`, in points."""
    lo, hi = ch["ci95"]
    return (f"eval accuracy {100 * ch['acc_a']:.1f}% -> {100 * ch['acc_b']:.1f}% ({100 * ch['diff']:+.1f} points, "
            f"paired 95% CI [{100 * lo:+.1f}, {100 * hi:+.1f}], {ch['n']} questions)")


def is_run_dir(p: Path) -> bool:
    return (p / "metrics.jsonl").is_file()


def find_runs(paths: list[str | Path]) -> tuple[dict[str, Path], Path, dict]:
    """Arm name -> run folder, the output folder, and the comparison.json contents (or {}).

    A path is either a run folder (has metrics.jsonl) or a comparison folder whose sub-folders are
    run folders (ordered as in its comparison.json when present)."""
    runs: dict[str, Path] = {}
    meta: dict = {}
    comparison_dirs = []
    for raw in paths:
        p = Path(raw)
        if not p.is_dir():
            raise FileNotFoundError(f"{p}: not a folder")
        if is_run_dir(p):
            name = p.name if p.name not in runs else f"{p.parent.name}/{p.name}"
            runs[name] = p
            continue
        sub = sorted(d for d in p.iterdir() if d.is_dir() and is_run_dir(d))
        if not sub:
            raise FileNotFoundError(f"{p}: neither a run folder (metrics.jsonl) nor a folder of run folders")
        comparison_dirs.append(p)
        if (p / COMPARISON_FILE).is_file():
            meta = json.loads((p / COMPARISON_FILE).read_text())
            order = {a: i for i, a in enumerate(meta.get("arms", []))}
            sub.sort(key=lambda d: (order.get(d.name, len(order)), d.name))
        for d in sub:
            runs[d.name if d.name not in runs else f"{p.name}/{d.name}"] = d
    if len(comparison_dirs) == 1 and len(paths) == 1:
        out = comparison_dirs[0]
    else:
        parents = {d.parent for d in runs.values()}
        out = parents.pop() if len(parents) == 1 else Path(".")
    return runs, out, meta


def pick_baseline(configs: dict[str, dict], preferred: str | None = BASELINE) -> str | None:
    """`preferred` if it is an arm, else the first arm trained with method grpo, else None."""
    if preferred in configs:
        return preferred
    for name, cfg in configs.items():
        if cfg.get("method") == "grpo":
            return name
    return None


# ---------------------------------------------------------------- pure computations
def training_rows(rows: list[dict]) -> list[dict]:
    """Rows of training steps (the step-0 evaluation row has no step_s)."""
    return [r for r in rows if "step_s" in r]


def eval_points(rows: list[dict]) -> list[tuple[float, float, int | None]]:
    """(elapsed_s, eval_accuracy, eval_n) of every evaluation, in time order."""
    pts = [(float(r.get("elapsed_s", 0.0)), float(r["eval_accuracy"]), r.get("eval_n"))
           for r in rows if r.get("eval_accuracy") is not None]
    return sorted(pts, key=lambda p: p[0])


def time_to_reach(rows: list[dict], target: float) -> float | None:
    """Training seconds of the first evaluation with accuracy >= target (None if never)."""
    for t, acc, _ in eval_points(rows):
        if acc >= target - 1e-12:
            return t
    return None


def lacks_target(baseline_time_s: float | None) -> bool:
    """Whether a seed has no target: its baseline reached it at 0 s, i.e. the untrained model already
    meets 99% of the baseline's peak (the baseline never beat its step-0 evaluation), so no arm can
    reach it sooner. wallclock.time_to_target and seeds.summarize_seeds count such seeds apart."""
    return baseline_time_s == 0


def accuracy_at(rows: list[dict], t: float | None = None) -> float | None:
    """Accuracy of the last evaluation at or before `t` training seconds (t=None: the last one)."""
    best = None
    for s, acc, _ in eval_points(rows):
        if t is None or s <= t * (1 + 1e-9) + 1e-9:
            best = acc
    return best


def _mean(xs: list[float]) -> float | None:
    xs = [float(x) for x in xs if x is not None and math.isfinite(float(x))]
    return sum(xs) / len(xs) if xs else None


def summarize(runs: dict[str, list[dict]], baseline: str | None = BASELINE,
              target_frac: float = TARGET_FRAC) -> list[dict]:
    """One summary row per arm (in the order of `runs`) from its metrics rows.

    target_accuracy = target_frac x the baseline's peak test accuracy (the paper: 99% of GRPO's peak);
    time_to_target_s = training seconds (elapsed_s, evaluation excluded) of the arm's first evaluation
    at or above the target (None: not reached, or no target because the baseline has no evaluation
    or a peak of 0); speedup = baseline's time_to_target_s / the arm's (None when either is missing
    or the arm's is 0, i.e. the untrained model already meets the target).
    """
    base_rows = runs.get(baseline) if baseline is not None else None
    base_peak = max((a for _, a, _ in eval_points(base_rows)), default=None) if base_rows else None
    target = target_frac * base_peak if base_peak is not None and base_peak > 0 else None
    base_time = time_to_reach(base_rows, target) if target is not None else None
    out = []
    for name, rows in runs.items():
        tr = training_rows(rows)
        ev = eval_points(rows)
        peak = max(ev, key=lambda p: (p[1], -p[0])) if ev else None  # highest accuracy, earliest on ties
        t_hit = time_to_reach(rows, target) if target is not None else None
        speedup = base_time / t_hit if base_time is not None and t_hit else None
        zero = _mean([r.get("zero_std_frac") for r in tr])
        out.append({
            "arm": name,
            "steps": max((int(r["step"]) for r in tr), default=0),
            "train_s": max((float(r["elapsed_s"]) for r in tr), default=0.0),
            "peak_accuracy": peak[1] if peak else None,
            "peak_time_s": peak[0] if peak else None,
            "final_accuracy": ev[-1][1] if ev else None,
            "num_evals": len(ev),
            "target_accuracy": target,
            "time_to_target_s": t_hit,
            "speedup": speedup,
            "mean_step_s": _mean([r.get("step_s") for r in tr]),
            "mean_rollout_s": _mean([r.get("rollout_s") for r in tr]),
            "mean_update_s": _mean([r.get("update_s") for r in tr]),
            "zero_std_frac": zero,
            "mean_reward": _mean([r.get("reward_mean") for r in tr]),
            "mean_kept_reward": _mean([r.get("kept_reward_mean") for r in tr]),
            "peak_mem_mb": max((float(r["peak_mem_mb"]) for r in tr if r.get("peak_mem_mb") is not None),
                               default=None),
        })
    return out


def sweep_points(runs: dict[str, list[dict]], configs: dict[str, dict], param: str = "n",
                 at_s: float | None = None) -> tuple[list[tuple[int, float]], float | None]:
    """[(value of `param`, accuracy at the time horizon)] sorted by value, and the horizon used.

    at_s=None: the common horizon, the earliest of the arms' last evaluations (each arm is read at
    its last evaluation at or before it); at_s=inf: each arm's final evaluation (a --budget-s run:
    every arm trained for the same budget)."""
    names = [a for a in runs if eval_points(runs[a]) and param in configs.get(a, {})]
    if not names:
        return [], None
    if at_s is None:
        at_s = min(eval_points(runs[a])[-1][0] for a in names)
    t = None if math.isinf(at_s) else at_s
    pts = sorted((int(configs[a][param]), accuracy_at(runs[a], t)) for a in names)
    return [(v, acc) for v, acc in pts if acc is not None], at_s


# ---------------------------------------------------------------- summary files
SUMMARY_COLUMNS = ["arm", "method", "rule", "n", "m", "steps", "train_s", "peak_accuracy", "peak_time_s",
                   "final_accuracy", "target_accuracy", "time_to_target_s", "speedup", "mean_step_s",
                   "mean_rollout_s", "mean_update_s", "zero_std_frac", "mean_reward", "mean_kept_reward",
                   "peak_mem_mb", "paired_diff", "paired_lo", "paired_hi", "paired_n", "paired_p"]
PAIRED_ARM = "pods_max_variance"  # the arm whose final evaluation is compared with every other arm's


def fmt(v, digits=3) -> str:
    """A summary.md cell: '-' for None, floats to `digits` decimals."""
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:.{digits}f}"
    return str(v)


def write_summary(summary: list[dict], out_dir: str | Path, configs: dict[str, dict] | None = None,
                  baseline: str | None = BASELINE, target_frac: float = TARGET_FRAC,
                  paired: dict[str, dict] | None = None) -> tuple[Path, Path]:
    """summary.csv (every column, empty = none) and summary.md (a readable table with notes).
    paired: arm -> paired_difference of PAIRED_ARM's final evaluation minus the arm's (`paired_against`)."""
    out_dir = Path(out_dir)
    configs = configs or {}
    paired = paired or {}
    rows = [{**{k: configs.get(s["arm"], {}).get(k) for k in ("method", "rule", "n", "m")}, **s,
             **paired_cols(paired.get(s["arm"]))} for s in summary]
    for r in rows:
        if r.get("method") == "grpo":
            r["rule"] = None  # vanilla GRPO keeps every rollout: no down-sampling rule
    csv_path = out_dir / "summary.csv"
    with csv_path.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=SUMMARY_COLUMNS, extrasaction="ignore")
        w.writeheader()
        for r in rows:
            w.writerow({k: ("" if r.get(k) is None else r.get(k)) for k in SUMMARY_COLUMNS})

    target = next((r["target_accuracy"] for r in rows), None)
    has_base = baseline is not None and any(r["arm"] == baseline for r in rows)
    lines = ["# minipods comparison", ""]
    if not has_base:
        lines.append(f"No baseline arm ({baseline!r}) among the runs: no time-to-target or speedup.")
    elif target is None:
        lines.append(f"Baseline `{baseline}` has no evaluation above 0 accuracy: the target (its peak x "
                     f"{target_frac:g}) is undefined, so no time-to-target or speedup.")
    else:
        lines.append(f"Target: {target_frac:.0%} of `{baseline}`'s peak test accuracy = **{target:.3f}**. "
                     f"Speedup = `{baseline}`'s time to the target / the arm's (the paper's definition).")
    sources = {c.get("data_source") for c in configs.values() if c.get("data_source")}
    if sources:
        lines.append(f"Data: {', '.join(sorted(sources))}. Times are training seconds (evaluation excluded).")
    lines += ["", "| arm | n | m | steps | train s | peak acc | time to target (s) | speedup | s/step | "
                  "rollout s | update s | zero-std groups | peak mem (MB) |",
              "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        if r["time_to_target_s"] is not None:
            hit = fmt(r["time_to_target_s"], 1)
        else:
            hit = "not reached" if r["target_accuracy"] is not None else "n/a"
        if r["speedup"] is not None:
            sp = f"{r['speedup']:.2f}x"
        else:
            sp = "at t=0" if r["time_to_target_s"] == 0 else ("-" if hit != "not reached" else "not reached")
        lines.append("| " + " | ".join([
            r["arm"], fmt(r.get("n")), fmt(r.get("m")), fmt(r["steps"]), fmt(r["train_s"], 1),
            fmt(r["peak_accuracy"]), hit, sp, fmt(r["mean_step_s"], 2), fmt(r["mean_rollout_s"], 2),
            fmt(r["mean_update_s"], 2), fmt(r["zero_std_frac"], 2), fmt(r["peak_mem_mb"], 0)]) + " |")
    lines += ["", "- peak acc: best test accuracy over the run's evaluations (step 0 included).",
              "- zero-std groups: mean fraction of prompts whose n rollouts all got the same reward "
              "(no GRPO signal).", "- rollout s / update s: mean seconds per step in the inference and "
              "the policy-update phase (the asymmetry PODS exploits).", ""]
    lines += paired_lines(paired)
    md_path = out_dir / "summary.md"
    md_path.write_text("\n".join(lines))
    return md_path, csv_path


def fmt_p(p: float | None) -> str:
    """A p-value cell: '-' for None, 3 significant digits, '<0.0001' below that."""
    return "-" if p is None else ("<0.0001" if p < 1e-4 else f"{p:.3g}")


def paired_cols(p: dict | None, prefix: str = "paired") -> dict:
    """The summary.csv columns {prefix}_diff, _lo, _hi, _n, _p of a paired_difference ({} when it has none)."""
    if not p or p.get("diff") is None:
        return {}
    return {f"{prefix}_diff": p["diff"], f"{prefix}_lo": p["ci95"][0], f"{prefix}_hi": p["ci95"][1],
            f"{prefix}_n": p["n"], f"{prefix}_p": p["p"]}


def paired_lines(paired: dict[str, dict]) -> list[str]:
    """summary.md's table of the paired differences (arm -> paired_difference, `paired_against`)."""
    rows = [(a, p) for a, p in paired.items() if p.get("diff") is not None]
    if not rows:
        return []
    out = [(f"Paired difference, `{PAIRED_ARM}` minus each arm, final evaluations on the same questions "
            "(points; Newcombe's paired 95% score interval; p: exact McNemar test of any difference):"), "",
           f"| arm | difference | 95% CI | McNemar p | questions | only {PAIRED_ARM} right | only the arm right |",
           "|---|---:|---:|---:|---:|---:|---:|"]
    for a, p in rows:
        out.append(f"| {a} | {100 * p['diff']:+.1f} | [{100 * p['ci95'][0]:+.1f}, {100 * p['ci95'][1]:+.1f}] | "
                   f"{fmt_p(p['p'])} | {p['n']} | {p['b_only']} | {p['a_only']} |")
    return out + [""]
