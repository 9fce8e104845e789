"""Figures and the summary table of a comparison, redrawn from saved metrics: `python -m minipods.plots`.

    python -m minipods.plots runs/compare                 # a comparison folder (arm folders inside)
    python -m minipods.plots runs/grpo runs/pods --out figs  # or individual run folders

Reads each run's metrics.jsonl (+ config.json) and writes, into the comparison folder (or --out):
  accuracy_vs_time.png    test accuracy vs wall-clock training seconds, one line per arm (the paper's
                          headline figure: PODS reaches GRPO's peak sooner);
  reward_vs_step.png      training reward per step, of all n rollouts and of the kept m;
  time_breakdown.png      mean seconds per step split into rollout (inference) and update, and peak memory;
  sweep_accuracy_vs_n.png accuracy at a fixed time against n (only for a `compare --sweep` folder);
  summary.md, summary.csv per arm: peak accuracy, time to reach 99% of GRPO's peak and the speedup
                          (the paper's definition), mean step/rollout/update seconds, zero-variance groups.

Nothing here needs torch, a model or a re-run. `summarize(runs)` is a pure function of the metric rows.
Figures are drawn on matplotlib's Agg canvas directly (no pyplot, no global backend change).
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import sys
from pathlib import Path

BASELINE = "grpo"  # the arm whose peak accuracy defines the target (paper: vanilla GRPO)
TARGET_FRAC = 0.99  # paper: time to reach 99% of GRPO's peak test accuracy
COMPARISON_FILE = "comparison.json"  # written by minipods.compare: arm order, baseline, sweep
FIGURES = ("accuracy_vs_time.png", "reward_vs_step.png", "time_breakdown.png")
SWEEP_FIGURE = "sweep_accuracy_vs_n.png"
MAX_BANDS = 3  # draw 95% confidence bands on the accuracy curves only up to this many arms


# ---------------------------------------------------------------- reading runs
def read_rows(run_dir: str | Path) -> list[dict]:
    path = Path(run_dir) / "metrics.jsonl"
    if not path.is_file():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def read_config(run_dir: str | Path) -> dict:
    path = Path(run_dir) / "config.json"
    return json.loads(path.read_text()) if path.is_file() else {}


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
                   "peak_mem_mb"]


def _fmt(v, digits=3) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:.{digits}f}"
    return str(v)


def write_summary(summary: list[dict], out_dir: str | Path, configs: dict[str, dict] | None = None,
                  baseline: str | None = BASELINE, target_frac: float = TARGET_FRAC) -> tuple[Path, Path]:
    """summary.csv (every column, empty = none) and summary.md (a readable table with notes)."""
    out_dir = Path(out_dir)
    configs = configs or {}
    rows = [{**{k: configs.get(s["arm"], {}).get(k) for k in ("method", "rule", "n", "m")}, **s} for s in summary]
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
            hit = _fmt(r["time_to_target_s"], 1)
        else:
            hit = "not reached" if r["target_accuracy"] is not None else "n/a"
        if r["speedup"] is not None:
            sp = f"{r['speedup']:.2f}x"
        else:
            sp = "at t=0" if r["time_to_target_s"] == 0 else ("-" if hit != "not reached" else "not reached")
        lines.append("| " + " | ".join([
            r["arm"], _fmt(r.get("n")), _fmt(r.get("m")), _fmt(r["steps"]), _fmt(r["train_s"], 1),
            _fmt(r["peak_accuracy"]), hit, sp, _fmt(r["mean_step_s"], 2), _fmt(r["mean_rollout_s"], 2),
            _fmt(r["mean_update_s"], 2), _fmt(r["zero_std_frac"], 2), _fmt(r["peak_mem_mb"], 0)]) + " |")
    lines += ["", "- peak acc: best test accuracy over the run's evaluations (step 0 included).",
              "- zero-std groups: mean fraction of prompts whose n rollouts all got the same reward "
              "(no GRPO signal).", "- rollout s / update s: mean seconds per step in the inference and "
              "the policy-update phase (the asymmetry PODS exploits).", ""]
    md_path = out_dir / "summary.md"
    md_path.write_text("\n".join(lines))
    return md_path, csv_path


# ---------------------------------------------------------------- figures
def _figure(ncols: int = 1, width: float = 7.0, height: float = 4.5):
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), dpi=110, layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(1, ncols)
    return fig, axes


def arm_label(name: str, cfg: dict | None) -> str:
    cfg = cfg or {}
    if "n" not in cfg:
        return name
    if cfg.get("method") == "grpo" or cfg.get("n") == cfg.get("m"):
        return f"{name} (n=m={cfg['n']})"
    return f"{name} (n={cfg['n']}, m={cfg.get('m')})"


def _colors(names):
    from matplotlib import colormaps

    cmap = colormaps["tab10"]
    return {a: cmap(i % 10) for i, a in enumerate(names)}


def wilson_interval(k: float, n: int, z: float = 1.96) -> tuple[float, float]:
    """95% Wilson score interval for a proportion k/n (well behaved at 0 and 1). Lives here, not in
    minipods.evaluate, so that plotting never imports torch; evaluate re-exports it."""
    if n == 0:
        return (0.0, 0.0)
    p = k / n
    d = 1 + z * z / n
    c = (p + z * z / (2 * n)) / d
    h = z * math.sqrt(max(p * (1 - p), 0.0) / n + z * z / (4 * n * n)) / d
    return (max(0.0, c - h), min(1.0, c + h))


def plot_accuracy_vs_time(runs: dict[str, list[dict]], path: str | Path,
                          configs: dict[str, dict] | None = None, baseline: str | None = BASELINE,
                          target_frac: float = TARGET_FRAC):
    """Test accuracy (%) against training seconds, one line per arm, 95% Wilson band, target line."""
    configs = configs or {}
    fig, ax = _figure()
    colors = _colors(runs)
    any_points = False
    bands = sum(bool(eval_points(r)) for r in runs.values()) <= MAX_BANDS  # more arms: bands would hide lines
    top = 0.0
    for name, rows in runs.items():
        pts = eval_points(rows)
        if not pts:
            continue
        any_points = True
        xs = [p[0] for p in pts]
        ys = [100 * p[1] for p in pts]
        band = [wilson_interval(p[1] * p[2], p[2]) if p[2] else (p[1], p[1]) for p in pts]
        ax.plot(xs, ys, marker="o", ms=4, color=colors[name], label=arm_label(name, configs.get(name)))
        top = max([top] + ys + ([100 * b[1] for b in band] if bands else []))
        if bands and len(pts) > 1:
            ax.fill_between(xs, [100 * b[0] for b in band], [100 * b[1] for b in band], color=colors[name],
                            alpha=0.12, lw=0)
    summ = summarize(runs, baseline, target_frac)
    target = next((s["target_accuracy"] for s in summ), None)
    if target is not None:
        ax.axhline(100 * target, color="grey", ls="--", lw=1,
                   label=f"{target_frac:.0%} of {baseline}'s peak ({100 * target:.1f}%)")
    if not any_points:
        ax.text(0.5, 0.5, "no evaluation rows\n(train with --eval-every K)", ha="center", va="center",
                transform=ax.transAxes, color="grey")
    ax.set_ylim(0, min(100.0, max(5.0, 1.1 * top)))
    ax.set_xlabel("training wall-clock time (s, evaluation excluded)")
    ax.set_ylabel("test accuracy (%)")
    ax.set_title("Test accuracy vs. training time" + (" (shaded: 95% CI)" if bands and any_points else ""))
    ax.grid(alpha=0.3)
    if any_points:
        ax.legend(fontsize=8, loc="best")
    fig.savefig(path)
    return fig


def plot_reward_vs_step(runs: dict[str, list[dict]], path: str | Path, configs: dict[str, dict] | None = None):
    """Mean training reward per step: all n rollouts (solid) and the kept m (dashed)."""
    configs = configs or {}
    fig, ax = _figure()
    colors = _colors(runs)
    for name, rows in runs.items():
        tr = training_rows(rows)
        if not tr:
            continue
        steps = [r["step"] for r in tr]
        ax.plot(steps, [r["reward_mean"] for r in tr], color=colors[name], marker=".",
                label=arm_label(name, configs.get(name)) + ": all n")
        ax.plot(steps, [r["kept_reward_mean"] for r in tr], color=colors[name], ls="--",
                label=arm_label(name, configs.get(name)) + ": kept m")
    ax.set_xlabel("training step")
    from matplotlib.ticker import MaxNLocator
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_ylabel("mean reward per rollout (correct 1 + format up to 0.1)")
    ax.set_title("Training reward: all n rollouts (solid) vs. the m kept for the update (dashed)")
    ax.title.set_fontsize(10)
    ax.grid(alpha=0.3)
    if any(training_rows(r) for r in runs.values()):
        ax.legend(fontsize=7, loc="best")
    fig.savefig(path)
    return fig


def plot_time_breakdown(runs: dict[str, list[dict]], path: str | Path, configs: dict[str, dict] | None = None):
    """Left: mean seconds per step, stacked rollout + update. Right: peak memory per arm."""
    configs = configs or {}
    summ = summarize(runs, baseline=None)
    fig, (ax, ax2) = _figure(ncols=2, width=10.0, height=4.5)
    names = [s["arm"] for s in summ]
    xs = list(range(len(names)))
    roll = [s["mean_rollout_s"] or 0.0 for s in summ]
    upd = [s["mean_update_s"] or 0.0 for s in summ]
    ax.bar(xs, roll, color="tab:blue", label="rollout (inference: generate n per prompt)")
    ax.bar(xs, upd, bottom=roll, color="tab:orange", label="policy update (on the kept m)")
    for x, r, u in zip(xs, roll, upd):
        ax.text(x, r + u, f"{r + u:.2f}s", ha="center", va="bottom", fontsize=8)
    labels = [arm_label(a, configs.get(a)).replace(" (", "\n(") for a in names]
    ax.set_xticks(xs, labels, fontsize=8)
    ax.set_ylabel("mean seconds per training step")
    ax.set_title("Where a step's time goes")
    ax.legend(fontsize=8, loc="upper left")
    ax.set_ylim(0, max([r + u for r, u in zip(roll, upd)] + [1e-9]) * 1.25)
    mem = [s["peak_mem_mb"] or 0.0 for s in summ]
    devices = {str(c.get("device", "")) for c in configs.values()}
    cpu = any(d.startswith("cpu") for d in devices)
    ax2.bar(xs, mem, color="tab:green")
    for x, v in zip(xs, mem):
        ax2.text(x, v, f"{v:.0f}", ha="center", va="bottom", fontsize=8)
    ax2.set_xticks(xs, labels, fontsize=8)
    ax2.set_ylabel("peak memory (MB)" + (": process RSS on CPU" if cpu else ": CUDA max allocated"))
    ax2.set_title("Peak memory per arm")
    ax2.set_ylim(0, max(mem + [1e-9]) * 1.2)
    fig.suptitle("Inference vs. update cost per step")
    fig.savefig(path)
    return fig


def plot_sweep(points: list[tuple[int, float]], path: str | Path, at_s: float | None, param: str = "n",
               fixed: str = ""):
    """Accuracy at a fixed training time against the sweep parameter (the paper's single-peaked curve)."""
    fig, ax = _figure()
    if points:
        ax.plot([p[0] for p in points], [100 * p[1] for p in points], marker="o", color="tab:purple")
        ax.set_ylim(0, min(100.0, max(5.0, 115 * max(p[1] for p in points))))
        ax.set_xscale("log", base=2)
        ax.set_xticks([p[0] for p in points], [str(p[0]) for p in points])
    else:
        ax.text(0.5, 0.5, "no evaluations", ha="center", va="center", transform=ax.transAxes, color="grey")
    what = "rollouts generated per prompt, n" if param == "n" else "rollouts kept per prompt, m"
    ax.set_xlabel(what + (f" ({fixed})" if fixed else ""))
    ax.set_ylabel("test accuracy (%)")
    when = "at the end of the time budget" if at_s is not None and math.isinf(at_s) else \
        (f"at {at_s:.0f} s of training" if at_s is not None else "")
    ax.set_title(f"PODS: test accuracy {when} vs. {param}")
    ax.grid(alpha=0.3)
    fig.savefig(path)
    return fig


# ---------------------------------------------------------------- everything at once
def make_all(run_dirs: dict[str, Path], out_dir: str | Path, meta: dict | None = None,
             baseline: str | None = None) -> dict[str, Path]:
    """Every figure and summary file for the runs `run_dirs` (arm name -> folder), into out_dir."""
    meta = meta or {}
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    runs = {a: read_rows(d) for a, d in run_dirs.items()}
    configs = {a: read_config(d) for a, d in run_dirs.items()}
    base = pick_baseline(configs, baseline or meta.get("baseline") or BASELINE)
    paths = {}
    sweep = meta.get("sweep")
    paths["accuracy_vs_time.png"] = out_dir / "accuracy_vs_time.png"
    plot_accuracy_vs_time(runs, paths["accuracy_vs_time.png"], configs, base)
    paths["reward_vs_step.png"] = out_dir / "reward_vs_step.png"
    plot_reward_vs_step(runs, paths["reward_vs_step.png"], configs)
    paths["time_breakdown.png"] = out_dir / "time_breakdown.png"
    plot_time_breakdown(runs, paths["time_breakdown.png"], configs)
    summary = summarize(runs, base)
    paths["summary.md"], paths["summary.csv"] = write_summary(summary, out_dir, configs, base)
    if sweep:
        arms = [a for a in sweep.get("arms", []) if a in runs]
        param = sweep.get("param", "n")
        budget = meta.get("budget_s") or 0
        pts, at_s = sweep_points({a: runs[a] for a in arms}, configs, param, math.inf if budget else None)
        other = "m" if param == "n" else "n"
        fixed = {configs[a].get(other) for a in arms if a in configs}
        name = SWEEP_FIGURE if param == "n" else f"sweep_accuracy_vs_{param}.png"
        paths[name] = out_dir / name
        plot_sweep(pts, paths[name], at_s, param, f"{other}={fixed.pop()}" if len(fixed) == 1 else "")
    return paths


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m minipods.plots",
                                description="Redraw a comparison's figures and summary from saved metrics.")
    p.add_argument("runs", nargs="+", help="run folders (with metrics.jsonl) or a comparison folder of them")
    p.add_argument("--out", default=None, help="output folder (default: the comparison folder / the runs' parent)")
    p.add_argument("--baseline", default=None, help=f"arm whose peak defines the target (default: {BASELINE!r} or the "
                                                     "first grpo run)")
    try:
        args = p.parse_args(argv)
        run_dirs, out, meta = find_runs(args.runs)
    except FileNotFoundError as e:
        print(f"minipods.plots: error: {e}", file=sys.stderr)
        return 2
    paths = make_all(run_dirs, args.out or out, meta, args.baseline)
    print("arms: " + ", ".join(run_dirs))
    for name, path in paths.items():
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
