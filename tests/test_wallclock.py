"""Time to target (minipods.analysis.summary.time_to_target) on hand-made studies with known answers:
the baseline's plateau as the target, a tolerance of one evaluation's standard error, never-reached
seeds kept as censored, steps beside seconds, the speed-up as a geometric mean over seeds."""
import math

import pytest

from minipods.analysis.summary import EQUAL_TIME, Point, difference, standard_error, summarize_study, summary_lines, \
    time_to_target


def _arm(*evals, n=100):
    """[(seconds, step, accuracy)] -> Points (100 questions)."""
    return [Point(t, s, a, n) for t, s, a in evals]


# seed 0: grpo's plateau (0.41 + 0.50) / 2 = 0.455, tolerance sqrt(.455 * .545 / 100) = 0.0498: level 0.4052;
#         grpo reaches it at 30 s (step 3), pods at 10 s (step 1), rand never (its run ends at 40 s, step 4)
# seed 1: plateau 0.30, level 0.2542: grpo at 20 s (step 2), pods at 20 s, rand at 40 s
STUDY = {
    0: {"grpo": _arm((0, 0, 0.1), (10, 1, 0.2), (20, 2, 0.3), (30, 3, 0.41), (40, 4, 0.5)),
        "pods": _arm((0, 0, 0.1), (10, 1, 0.41), (20, 2, 0.45)),
        "rand": _arm((0, 0, 0.1), (20, 2, 0.3), (40, 4, 0.35))},
    1: {"grpo": _arm((0, 0, 0.1), (20, 2, 0.3), (40, 4, 0.3)),
        "pods": _arm((0, 0, 0.1), (20, 2, 0.26), (40, 4, 0.5)),
        "rand": _arm((0, 0, 0.1), (20, 2, 0.2), (40, 4, 0.26))},
}


def test_plateau_target_tolerance_steps_and_censored_seeds():
    t = time_to_target(STUDY, "grpo")
    (t0, tol0), (t1, tol1) = t["targets"][0], t["targets"][1]
    assert (t0, t1) == pytest.approx((0.455, 0.30)) and tol0 == pytest.approx(math.sqrt(0.455 * 0.545 / 100))
    assert tol1 == pytest.approx(standard_error(0.3, 100))
    g, p, r = (t["arms"][a] for a in ("grpo", "pods", "rand"))
    assert g["per_seed"][0] == {"seconds": 30, "step": 3, "end_s": 40, "end_step": 4}
    assert (p["per_seed"][0]["seconds"], p["per_seed"][0]["step"]) == (10, 1)
    assert r["per_seed"][0]["seconds"] is None and r["per_seed"][0]["end_s"] == 40  # never: kept, censored
    assert (r["reached"], r["of"], r["censored"]) == (1, 2, 1)
    # restricted mean: never counts as the run's end (40 s, step 4)
    assert r["restricted_s"]["mean"] == 40 and r["restricted_step"]["mean"] == 4
    assert p["restricted_s"]["mean"] == 15 and p["restricted_step"]["mean"] == 1.5
    # speed-up: geometric mean of grpo / arm per seed: pods 30/10 and 20/20 -> sqrt(3)
    assert p["speedup"]["ratio"] == pytest.approx(math.sqrt(3)) and p["speedup"]["k"] == 2
    half = 12.706 * (math.log(3) / math.sqrt(2)) / math.sqrt(2)
    assert p["speedup"]["lo"] == pytest.approx(math.exp(math.log(3) / 2 - half))
    # rand: seed 0 enters at its bound 30 / 40 (its whole run), seed 1 at 20 / 40
    assert r["speedup"]["ratio"] == pytest.approx(math.sqrt(0.75 * 0.5))
    assert g["speedup"]["ratio"] == pytest.approx(1.0)


def test_a_seed_whose_baseline_meets_its_target_at_step_0_has_no_target():
    collapsed = {"grpo": _arm((0, 0, 0.2), (20, 2, 0.05), (40, 4, 0.1)), "pods": _arm((0, 0, 0.2), (40, 4, 0.3))}
    t = time_to_target({**STUDY, 2: collapsed}, "grpo")
    assert t["targets"][2] is None and 2 not in t["arms"]["pods"]["per_seed"]
    assert t["arms"]["pods"]["of"] == 2  # counted apart, not as reached
    assert "| 2 | no target: `grpo`'s step-0 evaluation meets it |" in "\n".join(
        summary_lines(summarize_study({**STUDY, 2: collapsed}, "grpo", "pods")))


def test_a_declared_target_replaces_the_plateau():
    t = time_to_target(STUDY, "grpo", target=0.5)
    assert t["plateau_k"] is None and t["targets"][0] == (0.5, pytest.approx(0.05))
    g, p = t["arms"]["grpo"], t["arms"]["pods"]
    assert g["per_seed"][0]["step"] == 4 and g["per_seed"][1]["seconds"] is None  # grpo never reaches 0.45 on seed 1
    assert p["per_seed"][0]["seconds"] == 20 and p["per_seed"][1]["seconds"] == 40  # level 0.45 both times
    assert p["speedup"]["k"] == 1 and p["speedup"]["ratio"] == pytest.approx(40 / 20)  # seed 1 has no grpo time
    assert p["speedup"]["lo"] is None


def test_equal_time_reads_both_arms_at_the_same_training_time():
    d = difference(STUDY, "grpo", "pods", EQUAL_TIME)  # seed 0: pods ends at 20 s, grpo read there (0.3)
    assert [v["diff"] for v in d["per_seed"].values()] == pytest.approx([0.45 - 0.3, 0.5 - 0.3])
    # the evaluation grid: pods's last evaluation 1 s after grpo's is read at grpo's 60 s, not at its 30 s one
    late = {0: {"grpo": _arm((0, 0, 0.1), (31, 3, 0.2), (60, 6, 0.3)), "pods": _arm((0, 0, 0.1), (30, 2, 0.4), (61, 4, 0.5))}}
    (s,) = difference(late, "grpo", "pods", EQUAL_TIME)["per_seed"].values()
    assert s["diff"] == pytest.approx(0.4 + 0.1 * 30 / 31 - 0.3) and s["paired"] is None


def test_summary_lines_show_time_steps_and_the_censored_bound():
    text = "\n".join(summary_lines(summarize_study(STUDY, "grpo", "pods")))
    assert "| 0 | 45.5 (±5.0) | 30 s (3) | 10 s (1) | never (40 s, 4) |" in text
    assert "1/2; ≥40 s, ≥4.0 steps | ≤0.61x" in text  # rand: censored seed at its bound
    assert "2/2; 15 s, 1.5 steps | 1.73x [" in text
    hours = "\n".join(summary_lines(summarize_study(STUDY, "grpo", "pods"), unit="h"))  # e.g. published runs
    assert "| 0 | 45.5 (±5.0) | 30.00 h (3) | 10.00 h (1) | never (40.00 h, 4) |" in hours
    flat = {**STUDY, 2: {a: _arm((0, 0, 0.3), (20, 2, 0.3)) for a in ("grpo", "pods", "rand")}}  # no target
    text = "\n".join(summary_lines(summarize_study(flat, "grpo", "pods")))
    assert "(2 of 3 seeds, 0 censored)" in text and "Speed-up of `pods`: left out: seed 2, no target" in text
    assert "Speed-up of `rand`: left out: seed 2, no target: `grpo`'s step-0 evaluation already meets its plateau (no " \
           "measurable learning); censored (at its run's end): seed 0." in text
