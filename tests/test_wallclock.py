"""minipods.analysis.wallclock and stats.bootstrap_ratio on hand-made run folders with known answers."""
import json
import math

import pytest

from minipods.analysis.stats import bootstrap_ratio, paired_difference
from minipods.analysis.wallclock import equal_time, eval_step_at, time_to_target, wallclock_lines


def _arm(d, evals):
    """A run folder: evals = [(step, elapsed_s, [0/1 per question])]; training rows at every eval step."""
    (d / "eval").mkdir(parents=True)
    rows = []
    for step, t, correct in evals:
        (d / "eval" / f"step_{step:05d}.jsonl").write_text(
            "".join(json.dumps({"index": i, "gold": "1", "pred": "1", "correct": c}) + "\n" for i, c in enumerate(correct)))
        row = {"step": step, "elapsed_s": t, "eval_accuracy": sum(correct) / len(correct), "eval_n": len(correct)}
        if step:
            row["step_s"] = 1.0
        rows.append(row)
    (d / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return d


@pytest.fixture
def seeds(tmp_path):
    # seed 0: grpo peaks at 0.75 (target 0.7425) at 40 s; pods reaches 0.75 at 10 s, random never
    # seed 1: grpo peaks at 0.5 at 20 s (from 0 at step 0); pods reaches it at 10 s, random at 30 s
    s0 = {"grpo": _arm(tmp_path / "s0/grpo", [(0, 0.0, [0, 0, 1, 0]), (2, 20.0, [1, 0, 1, 0]), (4, 40.0, [1, 1, 1, 0])]),
          "pods": _arm(tmp_path / "s0/pods", [(0, 0.0, [0, 0, 1, 0]), (1, 10.0, [1, 1, 1, 0]), (4, 50.0, [1, 1, 1, 1])]),
          "rand": _arm(tmp_path / "s0/rand", [(0, 0.0, [0, 0, 1, 0]), (4, 45.0, [0, 1, 1, 0])])}
    s1 = {"grpo": _arm(tmp_path / "s1/grpo", [(0, 0.0, [0, 0]), (2, 20.0, [1, 0])]),
          "pods": _arm(tmp_path / "s1/pods", [(0, 0.0, [0, 0]), (1, 10.0, [1, 0]), (3, 30.0, [1, 1])]),
          "rand": _arm(tmp_path / "s1/rand", [(0, 0.0, [0, 0]), (3, 30.0, [0, 1])])}
    return {0: s0, 1: s1}


def test_time_to_target_counts_seeds_and_bootstraps_the_ratio(seeds):
    ttt = time_to_target(seeds, baseline="grpo", reps=500)
    assert ttt["grpo"]["per_seed"] == {0: 40.0, 1: 20.0} and ttt["grpo"]["reached"] == 2
    assert ttt["pods"]["per_seed"] == {0: 10.0, 1: 10.0} and ttt["pods"]["reached"] == 2
    assert ttt["rand"]["per_seed"] == {0: None, 1: 30.0} and (ttt["rand"]["reached"], ttt["rand"]["of"]) == (1, 2)
    sp = ttt["pods"]["speedup"]
    assert sp["ratio"] == pytest.approx((40 + 20) / (10 + 10)) and sp["k"] == 2
    # the resamples of two seeds give (40+40)/20, (20+20)/20 and the full ratio: the interval spans them
    assert sp["lo"] == pytest.approx(2.0) and sp["hi"] == pytest.approx(4.0)
    assert ttt["rand"]["speedup"] == {"ratio": pytest.approx(20 / 30), "lo": None, "hi": None, "k": 1}  # seed 1 only
    lines = "\n".join(wallclock_lines(ttt, equal_time(seeds, "grpo"), "grpo"))
    assert "| rand | 1/2 seeds | 0.67x (1 seeds) |" in lines and "| pods | 2/2 seeds | 3.00x [2.00, 4.00] (2 seeds) |" in lines
    assert "No target" not in lines and all(r["no_target"] == [] for r in ttt.values())


def test_a_seed_where_grpo_never_beats_step_0_has_no_target(seeds, tmp_path):
    # seed 2: grpo falls from 0.5 at step 0 to 0 (its peak is the untrained model), so every arm
    # "reaches" 99% of it at 0 s: that seed cannot say who is sooner and must not count as reached
    seeds[2] = {"grpo": _arm(tmp_path / "s2/grpo", [(0, 0.0, [1, 0]), (2, 20.0, [0, 0])]),
                "pods": _arm(tmp_path / "s2/pods", [(0, 0.0, [1, 0]), (1, 10.0, [1, 1])]),
                "rand": _arm(tmp_path / "s2/rand", [(0, 0.0, [1, 0]), (3, 30.0, [0, 0])])}
    ttt = time_to_target(seeds, baseline="grpo", reps=500)
    assert all(r["no_target"] == [2] and 2 not in r["per_seed"] for r in ttt.values())
    assert (ttt["grpo"]["reached"], ttt["grpo"]["of"]) == (2, 2) and (ttt["rand"]["reached"], ttt["rand"]["of"]) == (1, 2)
    assert ttt["pods"]["speedup"]["ratio"] == pytest.approx(3.0)  # seeds 0 and 1 only, as without seed 2
    lines = "\n".join(wallclock_lines(ttt, equal_time(seeds, "grpo"), "grpo"))
    assert "| grpo | 2/2 seeds |" in lines and "No target on seed 2: `grpo` never beat its step-0 accuracy" in lines

    from minipods.analysis.results import read_rows
    from minipods.analysis.seeds import summarize_seeds

    rows = {r["arm"]: r for r in summarize_seeds({s: {a: read_rows(d) for a, d in arms.items()}
                                                  for s, arms in seeds.items()}, baseline="grpo")}
    assert rows["pods"]["time_to_target_s"] == {"mean": 10.0, "lo": 10.0, "hi": 10.0, "k": 2, "of": 2}
    assert rows["grpo"]["time_to_target_s"]["mean"] == pytest.approx(30.0)
    assert rows["pods"]["final_accuracy"]["of"] == 3  # the other metrics keep every seed


def test_equal_time_pairs_the_arm_at_grpos_time_with_grpos_final(seeds):
    eq = equal_time(seeds, baseline="grpo")
    # seed 0: grpo trained 40 s; pods' last evaluation by then is step 1 [1,1,1,0]; rand has only step 0 [0,0,1,0]
    # seed 1: grpo trained 20 s; pods step 1 [1,0], rand step 0 [0,0]; grpo's finals [1,1,1,0] and [1,0]
    want_pods = paired_difference([1, 1, 1, 0, 1, 0], [1, 1, 1, 0, 1, 0])
    want_rand = paired_difference([1, 1, 1, 0, 1, 0], [0, 0, 1, 0, 0, 0])
    assert eq["pods"] == want_pods and eq["pods"]["diff"] == 0.0
    assert eq["rand"] == want_rand and eq["rand"]["diff"] == pytest.approx(-3 / 6)
    assert "grpo" not in eq


def test_eval_step_at():
    rows = [{"step": 0, "elapsed_s": 0.0, "eval_accuracy": 0.1}, {"step": 1, "elapsed_s": 5.0},
            {"step": 2, "elapsed_s": 10.0, "eval_accuracy": 0.2}, {"step": 4, "elapsed_s": 20.0, "eval_accuracy": 0.3}]
    assert [eval_step_at(rows, t) for t in (0.0, 9.9, 10.0, 19.0, 99.0)] == [0, 0, 2, 2, 4]
    assert eval_step_at(rows[1:], 5.0) is None


def test_bootstrap_ratio_known_answers():
    assert bootstrap_ratio([], []) == {"ratio": None, "lo": None, "hi": None, "k": 0}
    assert bootstrap_ratio([3.0], [0.0])["ratio"] == math.inf
    r = bootstrap_ratio([2.0, 2.0, 2.0], [1.0, 1.0, 1.0])
    assert r == {"ratio": 2.0, "lo": 2.0, "hi": 2.0, "k": 3}  # every resample gives the same ratio
    r = bootstrap_ratio([1.0, 3.0], [1.0, 1.0], reps=400, seed=1)
    assert r["ratio"] == 2.0 and r["lo"] == 1.0 and r["hi"] == 3.0  # resamples: 1, 2 or 3
    assert bootstrap_ratio([1.0, 3.0], [1.0, 1.0], reps=400, seed=1) == r  # seeded
    with pytest.raises(ValueError, match="paired"):
        bootstrap_ratio([1.0], [1.0, 2.0])


def test_seed_summary_carries_time_to_target_and_equal_time(tmp_path):
    import csv

    from minipods.analysis.plots import make_seeds

    for s, (g_final, p_final) in enumerate([([1, 1, 0, 0], [1, 1, 1, 0]), ([1, 0, 0, 0], [1, 1, 0, 0])]):
        _arm(tmp_path / f"seed{s}" / "grpo", [(0, 0.0, [0, 0, 0, 0]), (2, 20.0, g_final)])
        _arm(tmp_path / f"seed{s}" / "pods_max_variance", [(0, 0.0, [0, 0, 0, 0]), (1, 10.0, p_final), (2, 25.0, p_final)])
    paths = make_seeds(tmp_path, {"seeds": [0, 1], "arms": ["grpo", "pods_max_variance"], "baseline": "grpo"})
    md = paths["summary.md"].read_text()
    assert "| pods_max_variance | 2/2 seeds | 2.00x [2.00, 2.00] (2 seeds) | +25.0 [" in md
    row = {r["arm"]: r for r in csv.DictReader(open(paths["summary.csv"]))}["pods_max_variance"]
    assert float(row["speedup"]) == 2.0 and float(row["equal_time_diff"]) == pytest.approx(2 / 8)
    assert int(row["equal_time_n"]) == 8 and row["time_to_target_reached"] == "2"
