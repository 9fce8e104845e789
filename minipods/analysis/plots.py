"""Figures and summary files of a comparison, redrawn from saved runs: `python -m minipods.plots`.

    python -m minipods.plots runs/compare                    # a comparison folder (arm folders inside)
    python -m minipods.plots runs/compare_seeds              # a `compare --seeds` folder (seed{s}/ARM)
    python -m minipods.plots runs/compare/grpo               # one run: its files go into that folder
    python -m minipods.plots runs/grpo runs/pods --out figs  # several runs: --out says where

Writes accuracy_vs_time.png (the paper's headline figure), with one seed also FIGURES' other two, and
summary.md/.csv (minipods.analysis.summary). No torch."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from minipods.analysis.results import (COMPARISON_FILE, find_runs, machine, read_config, read_rows,  # noqa: F401
                                       read_study, repriced_study, seed_dirs, summarize, training_rows)
from minipods.analysis.paper_runs import mean_curve
from minipods.analysis.summary import BASELINE, summarize_study, write_summary
from minipods.cli import Parser, fail
from minipods.stats import wilson_interval
from minipods.learning_curve import figure, moving_average, plot_learning_curve  # noqa: F401

FIGURES = ("accuracy_vs_time.png", "reward_vs_step.png", "time_breakdown.png")  # one seed's figures
MAX_BANDS = 3  # draw 95% bands on a single seed's accuracy curves only up to this many arms
AVERAGED_NOTES = {  # what the time-averaged accuracy is to a study (comparison.json's primary, else its preset)
    "time_averaged": ("primary", "the primary statistic of this study, fixed before its seeds ran (docs/class_study.md)"),
    "laptop": ("post hoc", "chosen after the ten-seed laptop study's seeds were seen (post hoc), never that study's primary")}
COST_KEYS = ("steps", "train_s", "mean_step_s", "mean_rollout_s", "mean_update_s", "zero_std_frac", "peak_mem_mb")


def arm_label(name: str, cfg: dict | None) -> str:
    if not cfg or "n" not in cfg:
        return name
    if cfg.get("method") == "grpo" or cfg.get("n") == cfg.get("m"):
        return f"{name} (n=m={cfg['n']})"
    return f"{name} (n={cfg['n']}, m={cfg.get('m')})"


def _colors(names):
    from matplotlib import colormaps
    return {a: colormaps["tab10"](i % 10) for i, a in enumerate(names)}


def plot_accuracy_vs_time(study: dict, path: str | Path, configs: dict | None = None, target: float | None = None):
    """Test accuracy (%) against training seconds per arm. One seed: a 95% Wilson band (up to MAX_BANDS
    arms) and the target line; several: each seed thin, the mean of the k-th evaluations bold."""
    configs, one = configs or {}, len(study) == 1
    arms = list(dict.fromkeys(a for by in study.values() for a in by))
    colors, (fig, ax) = _colors(arms), figure()
    for arm in arms:
        curves = [by[arm] for by in study.values() if by.get(arm)]
        label = arm_label(arm, configs.get(arm))
        if one:
            xs, ys = [p.seconds for p in curves[0]], [100 * p.accuracy for p in curves[0]]
            ax.plot(xs, ys, marker="o", ms=4, color=colors[arm], label=label)
            if len(arms) <= MAX_BANDS and len(xs) > 1:
                band = [wilson_interval(p.accuracy * p.n, p.n) if p.n else (p.accuracy,) * 2 for p in curves[0]]
                ax.fill_between(xs, [100 * b[0] for b in band], [100 * b[1] for b in band], color=colors[arm],
                                alpha=0.12, lw=0)
            continue
        for c in curves:
            ax.plot([p.seconds for p in c], [100 * p.accuracy for p in c], color=colors[arm], lw=0.8, alpha=0.45)
        mean = mean_curve(study, arm)
        ax.plot([p.seconds for p in mean], [100 * p.accuracy for p in mean], color=colors[arm], lw=2.5, marker="o",
                ms=4, label=f"{label}: mean of {len(curves)} seeds")
    if target is not None:
        ax.axhline(100 * target, color="grey", ls="--", lw=1, label=f"target ({100 * target:.1f}%)")
    if not arms:
        ax.text(0.5, 0.5, "no evaluation rows\n(train with --eval-every K)", ha="center", va="center",
                transform=ax.transAxes, color="grey")
    ax.set_ylim(bottom=0)
    note = " (thin: each seed; bold: mean)" if not one else " (shaded: 95% CI)" if 0 < len(arms) <= MAX_BANDS else ""
    ax.set(xlabel="training wall-clock time (s, evaluation excluded)", ylabel="test accuracy (%)",
           title="Test accuracy vs. training time" + note)
    ax.grid(alpha=0.3)
    if arms:
        ax.legend(fontsize=8, loc="best")
    fig.savefig(path)
    return fig


def plot_reward_vs_step(runs: dict[str, list[dict]], path: str | Path, configs: dict[str, dict] | None = None):
    """Mean training reward per step: all n rollouts (solid) and the kept m (dashed)."""
    configs, (fig, ax), colors = configs or {}, figure(), _colors(runs)
    for name, rows in runs.items():
        tr, label = training_rows(rows), arm_label(name, configs.get(name))
        if tr:
            steps = [r["step"] for r in tr]
            ax.plot(steps, [r["reward_mean"] for r in tr], color=colors[name], marker=".", label=label + ": all n")
            ax.plot(steps, [r["kept_reward_mean"] for r in tr], color=colors[name], ls="--", label=label + ": kept m")
    from matplotlib.ticker import MaxNLocator
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set(xlabel="training step", ylabel="mean reward per rollout (correct 1 + format up to 0.1)")
    ax.set_title("Training reward: all n rollouts (solid) vs. the m kept for the update (dashed)", fontsize=10)
    ax.grid(alpha=0.3)
    if any(training_rows(r) for r in runs.values()):
        ax.legend(fontsize=7, loc="best")
    fig.savefig(path)
    return fig


def plot_time_breakdown(runs: dict[str, list[dict]], path: str | Path, configs: dict[str, dict] | None = None):
    """Left: mean seconds per step, stacked rollout + update. Right: peak memory per arm."""
    configs, summ = configs or {}, summarize(runs)
    fig, (ax, ax2) = figure(ncols=2, width=10.0, height=4.5)
    xs = list(range(len(summ)))
    roll, upd = [s["mean_rollout_s"] or 0.0 for s in summ], [s["mean_update_s"] or 0.0 for s in summ]
    mem = [s["peak_mem_mb"] or 0.0 for s in summ]
    ax.bar(xs, roll, color="tab:blue", label="rollout (inference: generate n per prompt)")
    ax.bar(xs, upd, bottom=roll, color="tab:orange", label="policy update (on the kept m)")
    ax2.bar(xs, mem, color="tab:green")
    labels = [arm_label(s["arm"], configs.get(s["arm"])).replace(" (", "\n(") for s in summ]
    for x, r, u, v in zip(xs, roll, upd, mem):
        ax.text(x, r + u, f"{r + u:.2f}s", ha="center", va="bottom", fontsize=8)
        ax2.text(x, v, f"{v:.0f}", ha="center", va="bottom", fontsize=8)
    cpu = any(str(c.get("device", "")).startswith("cpu") for c in configs.values())
    ax.set(ylabel="mean seconds per training step", title="Where a step's time goes",
           ylim=(0, max([r + u for r, u in zip(roll, upd)] + [1e-9]) * 1.25))
    ax2.set(ylabel="peak memory (MB)" + (": process RSS on CPU" if cpu else ": CUDA max allocated"),
            title="Peak memory per arm", ylim=(0, max(mem + [1e-9]) * 1.2))
    for a in (ax, ax2):
        a.set_xticks(xs, labels, fontsize=8)
    ax.legend(fontsize=8, loc="upper left")
    fig.suptitle("Inference vs. update cost per step")
    fig.savefig(path)
    return fig


def mean_costs(rows: dict[int, dict[str, list[dict]]]) -> dict[str, dict]:
    """Arm -> each of COST_KEYS averaged over its seeds (results.summarize per seed; None if any lacks it)."""
    per_arm: dict[str, list[dict]] = {}
    for runs in rows.values():
        for r in summarize(runs):
            per_arm.setdefault(r["arm"], []).append(r)
    return {a: {k: sum(r[k] for r in rs) / len(rs) if all(r[k] is not None for r in rs) else None for k in COST_KEYS}
            for a, rs in per_arm.items()}


def make(seed_dirs: dict, out_dir: str | Path, meta: dict | None = None, baseline: str | None = None) -> dict:
    """Every figure and the summary of seed -> arm -> run folder into out_dir; returns name -> path.
    baseline: the target's arm (default: comparison.json's, else BASELINE, else the first grpo run)."""
    meta, out_dir = meta or {}, Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    rows = {s: {a: read_rows(d) for a, d in dirs.items()} for s, dirs in seed_dirs.items()}
    configs = {a: read_config(d) for dirs in seed_dirs.values() for a, d in dirs.items()}
    study = read_study(seed_dirs)
    pricing = {a: configs[a]["update_pricing"] for a in dict.fromkeys(a for by in study.values() for a in by)}
    baseline = baseline or meta.get("baseline") or BASELINE
    if baseline not in configs:
        baseline = next((a for a, cfg in configs.items() if cfg.get("method") == "grpo"), None)
    note = AVERAGED_NOTES.get(meta.get("primary")) or AVERAGED_NOTES.get(meta.get("preset"))
    s = summarize_study(study, baseline, costs=mean_costs(rows), pricing=pricing, note=note,
                        repriced=repriced_study(study, rows, configs), machines={s: machine(d) for s, d in seed_dirs.items()},
                        budget_s=next((c["budget_s"] for c in configs.values() if c.get("budget_s")), None))
    one = len(seed_dirs) == 1
    target = next((t[0] for t in (s["time"] or {"targets": {}})["targets"].values() if t and one), None)
    paths = {name: out_dir / name for name in FIGURES[:3 if one else 1]}
    plot_accuracy_vs_time(study, paths[FIGURES[0]], configs, target)
    if one:
        plot_reward_vs_step(rows[next(iter(rows))], paths[FIGURES[1]], configs)
        plot_time_breakdown(rows[next(iter(rows))], paths[FIGURES[2]], configs)
    paths["summary.md"], paths["summary.csv"] = write_summary(s, out_dir, configs)
    return paths


def main(argv=None) -> int:
    p = Parser(prog="python -m minipods.plots",
               description="Redraw a comparison's figures and summary from saved metrics.")
    p.add_argument("runs", nargs="+", help="run folders (with metrics.jsonl) or a comparison folder of them")
    p.add_argument("--out", default=None, help="output folder (default: the comparison or run folder given)")
    p.add_argument("--baseline", default=None, help=f"arm whose plateau is the target (default: {BASELINE!r} or the "
                   "first grpo run)")
    args = p.parse_args(argv)
    try:
        top = Path(args.runs[0]) / COMPARISON_FILE
        meta = json.loads(top.read_text()) if len(args.runs) == 1 and top.is_file() else {}
        if meta.get("seeds"):
            paths = make(seed_dirs(args.runs[0], meta), args.out or args.runs[0], meta, args.baseline)
        else:
            run_dirs, out, meta = find_runs(args.runs)
            if (args.out or out) is None:
                raise ValueError("several run folders: say where the files go with --out")
            print("arms: " + ", ".join(run_dirs))
            paths = make({0: run_dirs}, args.out or out, meta, args.baseline)
    except (OSError, ValueError, KeyError) as e:  # a RunError (a damaged file) is a ValueError
        return fail("minipods.plots", e)
    for path in paths.values():
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
