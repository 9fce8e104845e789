"""learning_curve.png, the figure `minipods.train` draws at the end of every run.

Reward, held-out accuracy and completion length per step, from metrics.jsonl, on matplotlib's Agg canvas
(no pyplot, no global backend change); minipods.analysis.plots uses the same `figure`."""

from __future__ import annotations

import json
from pathlib import Path

from minipods.checkpoint import read_log
from minipods.stats import wilson_interval


def figure(ncols: int = 1, width: float = 7.0, height: float = 4.5):
    """A figure with `ncols` axes side by side, on its own Agg canvas."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    fig = Figure(figsize=(width, height), dpi=110, layout="constrained")
    FigureCanvasAgg(fig)
    return fig, fig.subplots(1, ncols)


def moving_average(xs: list[float], window: int) -> list[float]:
    """Trailing mean over the last `window` values (fewer at the start)."""
    return [sum(xs[max(0, i - window + 1):i + 1]) / (i + 1 - max(0, i - window + 1)) for i in range(len(xs))]


def plot_learning_curve(run_dir: str | Path, path: str | Path, window: int = 4):
    """The run in `run_dir`: reward, accuracy (95% Wilson interval), completion length per step."""
    rows = read_log(Path(run_dir) / "metrics.jsonl")
    cfg_path = Path(run_dir) / "config.json"
    cfg = json.loads(cfg_path.read_text()) if cfg_path.is_file() else {}
    tr = [r for r in rows if "step_s" in r]  # training steps (the step-0 evaluation row has no step_s)
    steps = [r["step"] for r in tr]
    fig, (ax1, ax2, ax3) = figure(ncols=3, width=13.0, height=4.0)
    if tr:
        rew = [r["reward_mean"] for r in tr]
        ax1.plot(steps, rew, color="tab:blue", alpha=0.35, marker=".", label="mean reward (all n rollouts)")
        ax1.plot(steps, moving_average(rew, window), color="tab:blue", lw=2, label=f"moving average ({window} steps)")
        ax1.legend(fontsize=7, loc="best")
        ax3.plot(steps, [r.get("completion_len_mean") for r in tr], color="tab:green", marker=".")
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
        ax.set(xlabel="training step", ylabel=ylabel)
        ax.grid(alpha=0.3)
    fig.suptitle(f"{cfg.get('method', '')} n={cfg.get('n', '?')} m={cfg.get('m', '?')}: {Path(run_dir).name}")
    fig.savefig(path)
    return fig
