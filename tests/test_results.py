"""minipods.analysis.results / .seeds on hand-made metrics and per-question files: the summary numbers
(time to target, speedup, sweep points, means across seeds, learning per seed) against known answers."""

import csv
import json
import math

import pytest

from minipods.analysis import plots, results, seeds
from minipods.analysis.stats import mean_interval, paired_difference
from minipods.checkpoint import eval_path

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _csv(path):
    with open(path) as f:
        return list(csv.DictReader(f))


# ---------------------------------------------------------------- summarize() on hand-made metrics
def _run(evals, steps):
    """metrics rows: evals = [(elapsed_s, acc)], steps = [(step, elapsed_s, rollout_s, update_s, zero_std)]."""
    rows = [{"step": s, "elapsed_s": e, "rollout_s": r, "update_s": u, "step_s": r + u, "zero_std_frac": z,
             "reward_mean": 0.5, "kept_reward_mean": 0.6, "peak_mem_mb": 100.0 + s} for s, e, r, u, z in steps]
    for t, acc in evals:
        row = next((r for r in rows if r["elapsed_s"] == t), None)
        if row is None:
            rows.insert(0, row := {"step": 0, "elapsed_s": t})
        row.update(eval_accuracy=acc, eval_n=100)
    return rows


HAND = {
    "grpo": _run([(0, 0.2), (10, 0.4), (20, 0.5), (30, 0.48)],
                 [(1, 10, 4, 6, 0.5), (2, 20, 4, 6, 0.25), (3, 30, 4, 6, 0.0)]),
    "pods_max_variance": _run([(0, 0.2), (5, 0.45), (10, 0.5), (15, 0.52)],
                              [(1, 5, 4, 1, 0.0), (2, 10, 4, 1, 0.0), (3, 15, 4, 1, 0.0)]),
    "pods_random": _run([(0, 0.2), (12, 0.3), (24, 0.49)], [(1, 12, 8, 4, 1.0), (2, 24, 8, 4, 0.0)]),
}


def test_summarize_known_answer(tmp_path):
    s = {r["arm"]: r for r in results.summarize(HAND)}
    g, p, r = s["grpo"], s["pods_max_variance"], s["pods_random"]
    assert g["target_accuracy"] == pytest.approx(0.495)  # 99% of GRPO's peak 0.5
    assert (g["peak_accuracy"], g["peak_time_s"], g["time_to_target_s"], g["speedup"]) == (0.5, 20, 20, 1.0)
    assert (p["peak_accuracy"], p["time_to_target_s"], p["speedup"]) == (0.52, 10, 2.0)  # the paper's ~2x
    assert (r["time_to_target_s"], r["speedup"]) == (None, None)  # 0.49 < 0.495: never reached
    assert g["mean_step_s"] == 10 and g["mean_rollout_s"] == 4 and g["mean_update_s"] == 6
    assert g["zero_std_frac"] == pytest.approx(0.25) and r["zero_std_frac"] == 0.5
    assert (g["steps"], g["train_s"], g["final_accuracy"], g["peak_mem_mb"]) == (3, 30, 0.48, 103.0)
    md, _ = results.write_summary(list(s.values()), tmp_path, {"grpo": {"method": "grpo", "n": 4, "m": 4}})
    text = md.read_text()
    assert "2.00x" in text and "not reached" in text and "0.495" in text


def test_summarize_edge_cases():
    # no baseline arm, or a baseline that never scores: no target, no speedup (rather than 0/0)
    s = results.summarize({"pods_max_variance": HAND["pods_max_variance"]})
    assert s[0]["target_accuracy"] is None and s[0]["speedup"] is None and s[0]["peak_accuracy"] == 0.52
    zero = _run([(0, 0.0), (10, 0.0)], [(1, 10, 1, 1, 1.0)])
    s = results.summarize({"grpo": zero, "pods": HAND["pods_random"]})
    assert all(r["target_accuracy"] is None and r["time_to_target_s"] is None for r in s)
    # an arm without evaluations
    s = results.summarize({"grpo": HAND["grpo"], "x": [{"step": 1, "elapsed_s": 3, "step_s": 3}]})
    assert s[1]["peak_accuracy"] is None and s[1]["time_to_target_s"] is None and s[1]["mean_step_s"] == 3


def test_sweep_points_and_figure(tmp_path):
    runs = {"pods_n4": _run([(0, 0.2), (10, 0.3), (20, 0.35)], [(1, 10, 1, 1, 0), (2, 20, 1, 1, 0)]),
            "pods_n8": _run([(0, 0.2), (12, 0.45), (24, 0.5)], [(1, 12, 1, 1, 0), (2, 24, 1, 1, 0)]),
            "pods_n16": _run([(0, 0.2), (18, 0.4), (36, 0.6)], [(1, 18, 1, 1, 0), (2, 36, 1, 1, 0)])}
    cfgs = {"pods_n4": {"n": 4, "m": 2}, "pods_n8": {"n": 8, "m": 2}, "pods_n16": {"n": 16, "m": 2}}
    pts, at = results.sweep_points(runs, cfgs)  # common horizon: min of the last evaluations = 20 s
    assert at == 20 and pts == [(4, 0.35), (8, 0.45), (16, 0.4)]  # single-peaked in n
    pts, at = results.sweep_points(runs, cfgs, at_s=math.inf)  # a budget run: each arm's final evaluation
    assert pts == [(4, 0.35), (8, 0.5), (16, 0.6)]
    for a, rows in runs.items():
        (tmp_path / a).mkdir()
        (tmp_path / a / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
        (tmp_path / a / "config.json").write_text(json.dumps({**cfgs[a], "method": "pods"}))
    (tmp_path / results.COMPARISON_FILE).write_text(json.dumps(
        {"arms": list(runs), "sweep": {"param": "n", "values": [4, 8, 16], "arms": list(runs)}}))
    assert plots.main([str(tmp_path)]) == 0
    assert (tmp_path / plots.SWEEP_FIGURE).read_bytes().startswith(PNG_MAGIC)
    assert [r["arm"] for r in _csv(tmp_path / "summary.csv")] == ["pods_n4", "pods_n8", "pods_n16"]


def test_summarize_seeds_known_answer():
    other = _run([(0, 0.2), (10, 0.45), (20, 0.58)], [(1, 10, 4, 6, 0.5), (2, 20, 4, 6, 0.25)])
    rows = seeds.summarize_seeds({0: {"grpo": HAND["grpo"]}, 1: {"grpo": other}})
    g = rows[0]["final_accuracy"]
    assert (g["mean"], g["k"]) == (pytest.approx(0.53), 2)
    assert g["lo"] == 0.0 and g["hi"] == 1.0  # 0.53 +- 12.706 * 0.0707 / sqrt(2) = +-0.635, clipped to [0, 1]
    assert mean_interval([0.2, 0.3, 0.4])["lo"] == pytest.approx(0.3 - 4.303 * 0.1 / math.sqrt(3))
    assert rows[0]["peak_accuracy"]["mean"] == pytest.approx(0.54)
    assert rows[0]["time_to_target_s"]["mean"] == pytest.approx(20)  # 20 s in both seeds


def _fake_evals(run_dir, by_step):
    """A run folder holding only per-question evaluations: step -> 0/1 per question."""
    (run_dir / "eval").mkdir(parents=True)
    for step, correct in by_step.items():
        rows = [json.dumps({"index": i, "gold": str(i), "pred": str(i if c else -1), "correct": c})
                for i, c in enumerate(correct)]
        eval_path(run_dir, step).write_text("\n".join(rows) + "\n")
    return run_dir


def test_learning_by_seed_pools_first_vs_final_pairs(tmp_path):
    s0 = {"pods": _fake_evals(tmp_path / "s0" / "pods", {0: [0, 0, 1, 0], 8: [1, 0, 1, 0], 16: [1, 1, 1, 0]}),
          "grpo": _fake_evals(tmp_path / "s0" / "grpo", {0: [0, 0, 1, 0]})}  # one evaluation: no change
    s1 = {"pods": _fake_evals(tmp_path / "s1" / "pods", {0: [1, 0, 0], 16: [0, 1, 1]})}
    got = seeds.learning_by_seed({0: s0, 1: s1})
    p0, p1 = got["pods"]["per_seed"][0], got["pods"]["per_seed"][1]
    assert (p0["acc_a"], p0["acc_b"], p0["diff"], p0["last_step"]) == (0.25, 0.75, 0.5, 16)  # step 8 skipped
    assert (p1["a_only"], p1["b_only"]) == (1, 2)
    pooled = got["pods"]["pooled"]
    assert pooled == paired_difference([0, 0, 1, 0, 1, 0, 0], [1, 1, 1, 0, 0, 1, 1])
    assert pooled["n"] == 7 and pooled["diff"] == pytest.approx(3 / 7)
    assert (pooled["a_only"], pooled["b_only"]) == (1, 4) and pooled["p"] == pytest.approx(0.375)  # 2 * 6 / 32
    assert got["grpo"]["per_seed"] == {0: None, 1: None} and got["grpo"]["pooled"] is None
    rows = seeds.summarize_seeds({0: {"pods": []}, 1: {"pods": []}})
    md, csv_path = seeds.write_seed_summary(rows, {}, tmp_path, [0, 1], learning=got)
    line = next(ln for ln in md.read_text().splitlines() if ln.startswith("| pods |") and "→" in ln)
    assert "25.0 → 75.0 (+50.0" in line and "33.3 → 66.7 (+33.3" in line and "(+42.9" in line
    row = _csv(csv_path)[0]
    assert float(row["learn_diff"]) == pytest.approx(3 / 7) and int(row["learn_n"]) == 7
    assert float(row["learn_p"]) == pytest.approx(0.375)
    assert (float(row["learn_lo"]), float(row["learn_hi"])) == pytest.approx(pooled["ci95"])
