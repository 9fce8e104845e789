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
                          (the paper's definition), mean step/rollout/update seconds, zero-variance groups,
                          and the paired difference of pods_max_variance against each arm (same questions).
A `compare --seeds` folder (seed{s}/{arm}) gets, at its top, summary.md/.csv with the mean and 95% interval
across seeds and accuracy_vs_time.png with each seed thin and the mean bold (`make_seeds`); each seed{s}/
folder holds that seed's figures. A finished run also has its own learning_curve.png (`plot_learning_curve`).

Nothing here needs torch, a model or a re-run; the numbers come from minipods.analysis.results and
minipods.analysis.seeds, this module only draws. Figures are drawn on matplotlib's Agg canvas directly
(no pyplot, no global backend change).
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

from minipods.analysis.results import (BASELINE, COMPARISON_FILE, TARGET_FRAC, eval_points, find_runs, pick_baseline,
                                       read_config, read_rows, summarize, sweep_points, training_rows, write_summary)
from minipods.analysis.seeds import learning_by_seed, paired_against, summarize_seeds, write_seed_summary
from minipods.analysis.wallclock import equal_time, time_to_target
from minipods.analysis.stats import wilson_interval
from minipods.cli import Parser, fail

FIGURES = ("accuracy_vs_time.png", "reward_vs_step.png", "time_breakdown.png")
SWEEP_FIGURE = "sweep_accuracy_vs_n.png"
MAX_BANDS = 3  # draw 95% confidence bands on the accuracy curves only up to this many arms


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


def moving_average(xs: list[float], window: int) -> list[float]:
    """Trailing mean over the last `window` values (fewer at the start)."""
    return [sum(xs[max(0, i - window + 1):i + 1]) / (i + 1 - max(0, i - window + 1)) for i in range(len(xs))]


def plot_learning_curve(run_dir: str | Path, path: str | Path, window: int = 4):
    """One run: reward per step with a moving average; held-out accuracy (95% Wilson interval) per
    evaluation; mean completion length per step against the cap. Written by train at the end."""
    rows = read_rows(run_dir)
    cfg = read_config(run_dir)
    tr = training_rows(rows)
    steps = [r["step"] for r in tr]
    fig, (ax1, ax2, ax3) = _figure(ncols=3, width=13.0, height=4.0)
    if tr:
        rew = [r["reward_mean"] for r in tr]
        ax1.plot(steps, rew, color="tab:blue", alpha=0.35, marker=".", label="mean reward (all n rollouts)")
        ax1.plot(steps, moving_average(rew, window), color="tab:blue", lw=2, label=f"moving average ({window} steps)")
        ax1.legend(fontsize=7, loc="best")
        lens = [r.get("completion_len_mean") for r in tr]
        ax3.plot(steps, lens, color="tab:green", marker=".")
        if cfg.get("max_new_tokens"):
            ax3.axhline(cfg["max_new_tokens"], color="grey", ls="--", lw=1, label="cap (max_new_tokens)")
            ax3.legend(fontsize=7, loc="best")
    ev = [(r["step"], r["eval_accuracy"], r.get("eval_n") or 0) for r in rows if r.get("eval_accuracy") is not None]
    if ev:
        ys = [100 * a for _, a, _ in ev]
        ci = [wilson_interval(a * k, k) if k else (a, a) for _, a, k in ev]
        ax2.errorbar([s for s, _, _ in ev], ys, yerr=[[y - 100 * c[0] for y, c in zip(ys, ci)],
                                                      [100 * c[1] - y for y, c in zip(ys, ci)]],
                     color="tab:red", marker="o", capsize=3)
        ax2.set_ylim(0, min(100.0, max(5.0, 110 * max(c[1] for c in ci))))
    else:
        ax2.text(0.5, 0.5, "no evaluations\n(--eval-every K)", ha="center", va="center", transform=ax2.transAxes)
    for ax, title, ylabel in ((ax1, "Training reward", "reward per rollout"),
                              (ax2, f"Held-out greedy accuracy ({ev[0][2] if ev else 0} questions, 95% CI)",
                               "accuracy (%)"),
                              (ax3, "Mean completion length", "tokens")):
        ax.set_title(title, fontsize=10)
        ax.set_xlabel("training step")
        ax.set_ylabel(ylabel)
        ax.grid(alpha=0.3)
    fig.suptitle(f"{cfg.get('method', '')} n={cfg.get('n', '?')} m={cfg.get('m', '?')}: {Path(run_dir).name}")
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
    paths["summary.md"], paths["summary.csv"] = write_summary(summary, out_dir, configs, base,
                                                              paired=paired_against({0: dict(run_dirs)}))
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


def plot_accuracy_seeds(per_seed: dict[int, dict[str, list[dict]]], path: str | Path,
                        configs: dict[str, dict] | None = None):
    """Test accuracy vs. training seconds: each seed thin, the mean over seeds bold (the k-th
    evaluation of every seed averaged, at the seeds' mean time of it), one colour per arm."""
    configs = configs or {}
    arms = list(dict.fromkeys(a for runs in per_seed.values() for a in runs))
    colors = _colors(arms)
    fig, ax = _figure()
    for arm in arms:
        curves = [eval_points(runs[arm]) for runs in per_seed.values() if arm in runs and eval_points(runs[arm])]
        for pts in curves:
            ax.plot([p[0] for p in pts], [100 * p[1] for p in pts], color=colors[arm], lw=0.8, alpha=0.45)
        k = min((len(c) for c in curves), default=0)
        if k:
            xs = [sum(c[i][0] for c in curves) / len(curves) for i in range(k)]
            ys = [100 * sum(c[i][1] for c in curves) / len(curves) for i in range(k)]
            ax.plot(xs, ys, color=colors[arm], lw=2.5, marker="o", ms=4,
                    label=f"{arm_label(arm, configs.get(arm))}: mean of {len(curves)} seeds")
    ax.set_xlabel("training wall-clock time (s, evaluation excluded)")
    ax.set_ylabel("test accuracy (%)")
    ax.set_title("Test accuracy vs. training time (thin: each seed; bold: mean)")
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    if arms:
        ax.legend(fontsize=8, loc="best")
    fig.savefig(path)
    return fig


def make_seeds(out_dir: str | Path, meta: dict) -> dict[str, Path]:
    """The top-level files of a several-seed comparison (OUTPUT_DIR/seed{s}/{arm}): summary.md,
    summary.csv (mean and 95% interval across seeds, paired differences), accuracy_vs_time.png."""
    out_dir = Path(out_dir)
    seeds = list(meta["seeds"])
    dirs = {s: {a: out_dir / f"seed{s}" / a for a in meta["arms"] if (out_dir / f"seed{s}" / a / "metrics.jsonl").is_file()}
            for s in seeds}
    per_seed = {s: {a: read_rows(d) for a, d in ds.items()} for s, ds in dirs.items()}
    configs = {a: read_config(d) for ds in dirs.values() for a, d in ds.items()}
    paths = {"accuracy_vs_time.png": out_dir / "accuracy_vs_time.png"}
    plot_accuracy_seeds(per_seed, paths["accuracy_vs_time.png"], configs)
    baseline = meta.get("baseline") or BASELINE
    rows = summarize_seeds(per_seed, baseline)
    wall = (time_to_target(dirs, baseline), equal_time(dirs, baseline)) if any(baseline in d for d in dirs.values()) \
        else None
    paths["summary.md"], paths["summary.csv"] = write_seed_summary(rows, paired_against(dirs), out_dir, seeds, configs,
                                                                   learning_by_seed(dirs), wall)
    return paths


def main(argv=None) -> int:
    p = Parser(prog="python -m minipods.plots",
               description="Redraw a comparison's figures and summary from saved metrics.")
    p.add_argument("runs", nargs="+", help="run folders (with metrics.jsonl) or a comparison folder of them")
    p.add_argument("--out", default=None, help="output folder (default: the comparison folder / the runs' parent)")
    p.add_argument("--baseline", default=None, help=f"arm whose peak defines the target (default: {BASELINE!r} or the "
                                                     "first grpo run)")
    args = p.parse_args(argv)
    top = Path(args.runs[0]) / COMPARISON_FILE
    if len(args.runs) == 1 and top.is_file() and json.loads(top.read_text()).get("seeds"):
        for path in make_seeds(args.runs[0], json.loads(top.read_text())).values():  # compare --seeds
            print(f"wrote {path}")
        return 0
    try:
        run_dirs, out, meta = find_runs(args.runs)
    except FileNotFoundError as e:
        return fail("minipods.plots", e)
    paths = make_all(run_dirs, args.out or out, meta, args.baseline)
    print("arms: " + ", ".join(run_dirs))
    for name, path in paths.items():
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
