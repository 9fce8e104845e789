"""minipods.analysis.plots: what each figure draws, read back from its matplotlib objects (line data,
bar heights, bands, titles, legend labels) on hand-made metrics; not just "a PNG was written"."""

import json

import numpy as np
import pytest

from minipods.analysis import plots
from minipods.stats import wilson_interval
from minipods.analysis.summary import Point

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _rows(evals, steps):
    """metrics rows: evals = [(step, elapsed_s, acc)], steps = [(step, elapsed_s, rollout_s, update_s,
    reward, kept_reward, mem)]; an evaluation at a step's time joins that step's row (4 kept rows, none silent)."""
    rows = [{"step": s, "elapsed_s": e, "rollout_s": r, "update_s": u, "step_s": r + u, "zero_std_frac": 0.0,
             "kept_rows": 4, "silent_rows": 0,
             "reward_mean": rw, "kept_reward_mean": kr, "peak_mem_mb": mem, "completion_len_mean": 10.0 + s}
            for s, e, r, u, rw, kr, mem in steps]
    for step, t, acc in evals:
        row = next((r for r in rows if r["step"] == step), None)
        if row is None:
            rows.insert(0, row := {"step": step, "elapsed_s": t})
        row.update(eval_accuracy=acc, eval_n=50)
    return rows


RUNS = {
    "grpo": _rows([(0, 0, 0.2), (2, 20, 0.5)], [(1, 10, 4, 6, 0.1, 0.1, 300.0), (2, 20, 4, 6, 0.3, 0.3, 310.0)]),
    "pods_max_variance": _rows([(0, 0, 0.2), (2, 10, 0.6)],
                               [(1, 5, 4, 1, 0.2, 0.5, 200.0), (2, 10, 4, 1, 0.4, 0.7, 220.0)]),
}
CONFIGS = {"grpo": {"method": "grpo", "n": 4, "m": 4, "update_pricing": "skip_silent"},
           "pods_max_variance": {"method": "pods", "n": 8, "m": 4, "update_pricing": "skip_silent"}}
LABELS = {"grpo": "grpo (n=m=4)", "pods_max_variance": "pods_max_variance (n=8, m=4)"}


def _study(runs_by_seed):
    """seed -> arm -> metrics rows, as a study of Points."""
    return {s: {a: sorted(Point(r["elapsed_s"], r["step"], r["eval_accuracy"], r["eval_n"]) for r in rows
                          if "eval_accuracy" in r) for a, rows in runs.items()} for s, runs in runs_by_seed.items()}


def _lines(ax):
    """label -> (xdata, ydata) of the axes' labelled lines."""
    return {ln.get_label(): (list(ln.get_xdata()), list(ln.get_ydata())) for ln in ax.get_lines()
            if not ln.get_label().startswith("_")}


def _legend(ax):
    return [t.get_text() for t in ax.get_legend().get_texts()]


def test_accuracy_vs_time_draws_each_arm_its_band_and_the_target(tmp_path):
    fig = plots.plot_accuracy_vs_time(_study({0: RUNS}), tmp_path / "a.png", CONFIGS, target=0.35)
    assert (tmp_path / "a.png").read_bytes().startswith(PNG_MAGIC)
    ax = fig.axes[0]
    lines = _lines(ax)
    assert lines[LABELS["grpo"]] == ([0.0, 20.0], [20.0, 50.0])  # seconds, accuracy in %
    assert lines[LABELS["pods_max_variance"]] == ([0.0, 10.0], [20.0, 60.0])
    target = "target (35.0%)"
    assert lines[target][1] == [35.0, 35.0]
    assert _legend(ax) == [LABELS["grpo"], LABELS["pods_max_variance"], target]
    assert ax.get_title() == "Test accuracy vs. training time (shaded: 95% CI)"
    # one band per arm, spanning each evaluation's Wilson interval (50 questions)
    bands = ax.collections
    assert len(bands) == 2
    ys = set(np.round(bands[1].get_paths()[0].vertices[:, 1], 6))
    for acc in (0.2, 0.6):
        lo, hi = wilson_interval(acc * 50, 50)
        assert round(100 * lo, 6) in ys and round(100 * hi, 6) in ys


def test_reward_vs_step_draws_all_n_solid_and_kept_m_dashed(tmp_path):
    ax = plots.plot_reward_vs_step(RUNS, tmp_path / "r.png", CONFIGS).axes[0]
    lines = {ln.get_label(): ln for ln in ax.get_lines()}
    p = LABELS["pods_max_variance"]
    assert list(lines[p + ": all n"].get_ydata()) == [0.2, 0.4]
    assert list(lines[p + ": kept m"].get_ydata()) == [0.5, 0.7]
    assert list(lines[p + ": kept m"].get_xdata()) == [1, 2]
    assert lines[p + ": all n"].get_linestyle() == "-" and lines[p + ": kept m"].get_linestyle() == "--"
    assert list(lines[LABELS["grpo"] + ": all n"].get_ydata()) == [0.1, 0.3]
    assert ax.get_title().startswith("Training reward: all n rollouts (solid)")


def test_time_breakdown_stacks_rollout_and_update_and_shows_memory(tmp_path):
    ax, ax2 = plots.plot_time_breakdown(RUNS, tmp_path / "t.png", CONFIGS).axes
    roll, upd = ax.containers
    assert [b.get_height() for b in roll] == [4.0, 4.0]  # mean rollout seconds per step
    assert [b.get_height() for b in upd] == [6.0, 1.0]  # mean update seconds, on top of the rollout
    assert [b.get_y() for b in upd] == [4.0, 4.0]
    assert [t.get_text() for t in ax.texts] == ["10.00s", "5.00s"]
    assert [b.get_height() for b in ax2.containers[0]] == [310.0, 220.0]  # peak memory per arm
    assert [t.get_text() for t in ax.get_xticklabels()] == ["grpo\n(n=m=4)", "pods_max_variance\n(n=8, m=4)"]


def test_learning_curve_reads_the_run_folder(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    rows = RUNS["pods_max_variance"]
    (run / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (run / "config.json").write_text(json.dumps({"method": "pods", "n": 8, "m": 4, "max_new_tokens": 64}))
    fig = plots.plot_learning_curve(run, tmp_path / "lc.png", window=2)
    ax1, ax2, ax3 = fig.axes
    rew = _lines(ax1)
    assert rew["mean reward (all n rollouts)"][1] == [0.2, 0.4]
    assert rew["moving average (2 steps)"][1] == pytest.approx([0.2, 0.3])
    assert ax2.get_title() == "Held-out greedy accuracy (50 questions, 95% CI)"
    acc_line = ax2.get_lines()[0]
    assert list(acc_line.get_xdata()) == [0, 2] and list(acc_line.get_ydata()) == pytest.approx([20.0, 60.0])
    # the error bars span the Wilson intervals
    segs = ax2.collections[0].get_segments()
    lo, hi = wilson_interval(0.6 * 50, 50)
    assert [s[:, 1].tolist() for s in segs][1] == pytest.approx([100 * lo, 100 * hi])
    lens = _lines(ax3)
    assert lens["cap (max_new_tokens)"][1] == [64, 64]
    assert ax3.get_lines()[0].get_ydata().tolist() == [11.0, 12.0]
    assert fig._suptitle.get_text() == "pods n=8 m=4: run"


def test_moving_average_by_hand():
    assert plots.moving_average([1.0, 2.0, 3.0, 4.0], 3) == pytest.approx([1.0, 1.5, 2.0, 3.0])


def test_seed_figures(tmp_path):
    per_seed = {0: {"grpo": _rows([(0, 0, 0.2), (2, 20, 0.4)], [])},
                1: {"grpo": _rows([(0, 0, 0.3), (2, 30, 0.6)], [])}}
    ax = plots.plot_accuracy_vs_time(_study(per_seed), tmp_path / "seeds.png", CONFIGS).axes[0]
    thin = [ln for ln in ax.get_lines() if ln.get_label().startswith("_")]
    assert [list(ln.get_ydata()) for ln in thin] == [[20.0, 40.0], [30.0, 60.0]]
    mean = _lines(ax)[LABELS["grpo"] + ": mean of 2 seeds"]
    assert mean[0] == [0.0, 25.0] and mean[1] == pytest.approx([25.0, 50.0])


def _write_run(d, rows, cfg):
    d.mkdir(parents=True)
    (d / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (d / "config.json").write_text(json.dumps(cfg))
    return d


def test_plots_cli_writes_one_runs_files_into_that_run_never_over_the_seed_summary(tmp_path, capsys):
    seed = tmp_path / "seed0"
    for arm, rows in RUNS.items():
        _write_run(seed / arm, rows, CONFIGS[arm])
    (seed / "summary.md").write_text("the seed's summary of all arms")
    assert plots.main([str(seed / "grpo")]) == 0
    assert (seed / "summary.md").read_text() == "the seed's summary of all arms"
    assert not (seed / "time_breakdown.png").exists()
    assert (seed / "grpo" / "summary.md").read_text().startswith("# minipods comparison: 1 seed (0)")
    assert all((seed / "grpo" / name).read_bytes().startswith(PNG_MAGIC) for name in plots.FIGURES)
    # several run folders need --out (their parent may be a seed's folder)
    assert plots.main([str(seed / "grpo"), str(seed / "pods_max_variance")]) == 2
    assert capsys.readouterr().err.strip().splitlines() == [
        "minipods.plots: error: several run folders: say where the files go with --out"]
    assert plots.main([str(seed / "grpo"), str(seed / "pods_max_variance"), "--out", str(tmp_path / "o")]) == 0
    assert "| pods_max_variance | 8 | 4 |" in (tmp_path / "o" / "summary.md").read_text()


def test_plots_cli_a_damaged_metrics_line_is_one_line_exit_2(tmp_path, capsys):
    run = _write_run(tmp_path / "grpo", RUNS["grpo"], CONFIGS["grpo"])
    lines = (run / "metrics.jsonl").read_text().splitlines()
    lines[0] = lines[0][:10]  # a torn line that is not the last: refused, not skipped
    (run / "metrics.jsonl").write_text("\n".join(lines) + "\n")
    assert plots.main([str(run)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("minipods.plots: error: ") and "Traceback" not in err
