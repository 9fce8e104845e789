"""minipods.analysis.stats: the intervals against published values, and the paired interval's coverage
simulated (it must hold its 95% where the old interval, conditional on the discordant count, did not)."""

import functools
import math
import random

import numpy as np
import pytest

from minipods.analysis.stats import (clopper_pearson, mcnemar_p, mean_interval, newcombe_paired, paired_difference,
                                     wilson_interval)

# Newcombe (1998), "Two-sided confidence intervals for the single proportion: comparison of seven
# methods", Stat Med 17:857, Table II: method 3 (Wilson score) and method 5 (Clopper-Pearson), 4 decimals.
SINGLE = [  # k, n, Wilson (lo, hi), Clopper-Pearson (lo, hi)
    (81, 263, (0.2553, 0.3662), (0.2527, 0.3676)),
    (15, 148, (0.0624, 0.1605), (0.0578, 0.1617)),
    (0, 20, (0.0, 0.1611), (0.0, 0.1684)),
    (1, 29, (0.0061, 0.1718), (0.0009, 0.1776)),
]


@pytest.mark.parametrize("k, n, wilson, cp", SINGLE)
def test_wilson_and_clopper_pearson_match_newcombe_1998(k, n, wilson, cp):
    assert wilson_interval(k, n) == pytest.approx(wilson, abs=5e-5)
    assert clopper_pearson(k, n) == pytest.approx(cp, abs=5e-5)


def test_clopper_pearson_closed_forms():
    # k = n: lo = (alpha/2)^(1/n); k = 0: hi = 1 - (alpha/2)^(1/n)
    assert clopper_pearson(5, 5) == (pytest.approx(0.025 ** (1 / 5), abs=1e-9), 1.0)
    assert clopper_pearson(0, 5) == (0.0, pytest.approx(1 - 0.025 ** (1 / 5), abs=1e-9))
    # k = 1 of 2: 1 - (1 - lo)^2 = 0.025, and symmetric
    lo, hi = clopper_pearson(1, 2)
    assert lo == pytest.approx(1 - math.sqrt(0.975), abs=1e-9) and hi == pytest.approx(math.sqrt(0.975), abs=1e-9)
    assert clopper_pearson(0, 0) == (0.0, 1.0)


# Paired tables (both, first only, second only, neither) -> the published interval for p1 - p2.
PAIRED = [
    # Newcombe (1998), "Improved confidence intervals for the difference between binomial proportions
    # based on paired data", Stat Med 17:2635: worked example a=36, b=12, c=2, d=0, method 10
    ((36, 12, 2, 0), 0.2, (0.0569, 0.3404)),
    # Fagerland, Lydersen & Laake, "Statistical Analysis of Contingency Tables" (2017), ch. 8, complete
    # response before and after consolidation therapy (Cavo et al. 2012), the Newcombe square-and-add
    # interval: estimate -0.0621 (95% CI -0.1186 to -0.0046); table [[59, 6], [16, 80]]
    ((59, 6, 16, 80), -0.0621, (-0.1186, -0.0046)),
]


@pytest.mark.parametrize("table, diff, ci", PAIRED)
def test_newcombe_paired_matches_published_values(table, diff, ci):
    assert newcombe_paired(*table) == pytest.approx(ci, abs=5e-5)
    # and through paired_difference: first = b (the later evaluation), second = a
    both, first, second, neither = table
    a = [1] * both + [0] * first + [1] * second + [0] * neither
    b = [1] * both + [1] * first + [0] * second + [0] * neither
    r = paired_difference(a, b)
    assert r["diff"] == pytest.approx(diff, abs=5e-5) and r["ci95"] == pytest.approx(ci, abs=5e-5)
    assert (r["b_only"], r["a_only"]) == (first, second)


def test_mcnemar_p_exact_values():
    # 0 vs 5 discordant: 2 * (1/2)^5; 2 vs 10: 2 * (1 + 12 + 66) / 2^12 (R: binom.test(2, 12)$p.value = 0.03857)
    assert mcnemar_p(0, 5) == pytest.approx(2 / 32)
    assert mcnemar_p(10, 2) == mcnemar_p(2, 10) == pytest.approx(2 * 79 / 4096) == pytest.approx(0.03857, abs=5e-6)
    assert mcnemar_p(0, 0) == 1.0 and mcnemar_p(3, 3) == 1.0  # capped at 1
    assert mcnemar_p(55, 95) == pytest.approx(0.00137, abs=5e-5)  # large d stays exact (integer arithmetic)


def test_identical_results_give_an_interval_around_zero_not_zero_width():
    a = [1, 0, 1, 1, 0, 0, 1, 0]
    r = paired_difference(a, list(a))
    assert (r["diff"], r["a_only"], r["b_only"], r["p"]) == (0.0, 0, 0, 1.0)
    assert r["acc_a"] == r["acc_b"] == 0.5 and r["n"] == 8
    lo, hi = r["ci95"]
    # 8 questions cannot pin the difference at exactly 0: the interval is symmetric and wide
    assert lo == pytest.approx(-hi) and hi > 0.1
    # all wrong twice: phi = 0 (an empty margin); p1 = l1 = 0, so each bound is one Wilson upper bound
    r = paired_difference([0] * 100, [0] * 100)
    w = wilson_interval(0, 100)[1]  # 1.96^2 / (100 + 1.96^2) = 0.0370
    assert r["ci95"] == pytest.approx((-w, w)) and w == pytest.approx(0.0370, abs=1e-4)


def test_one_sided_discordance_reaches_past_the_observed_difference():
    # 10 questions: both right on 2, both wrong on 3, b alone right on 5, a alone on none
    a = [1, 1, 0, 0, 0, 0, 0, 0, 0, 0]
    b = [1, 1, 0, 0, 0, 1, 1, 1, 1, 1]
    r = paired_difference(a, b)
    assert (r["acc_a"], r["acc_b"], r["diff"], r["a_only"], r["b_only"]) == (0.2, 0.7, 0.5, 0, 5)
    lo, hi = r["ci95"]
    assert lo < 0.5 < hi  # the old conditional interval had hi == 0.5 exactly
    assert r["p"] == pytest.approx(2 / 32)  # five discordant questions, all one way: not significant
    assert r["ci95"] == pytest.approx(newcombe_paired(2, 5, 0, 3))
    s = paired_difference(b, a)  # swapping the arms flips the sign and mirrors the interval
    assert s["diff"] == -0.5 and s["ci95"] == pytest.approx((-hi, -lo)) and s["p"] == r["p"]


def test_more_discordant_pairs_make_it_significant_and_pairing_narrows_it():
    rng = random.Random(0)
    a = [int(rng.random() < 0.3) for _ in range(200)]
    b = [1 if x else int(rng.random() < 0.3) for x in a]  # b keeps every a-right question and gains more
    r = paired_difference(a, b)
    assert r["a_only"] == 0 and r["b_only"] > 20 and r["ci95"][0] > 0 and r["p"] < 1e-6
    # the paired interval is narrower than the gap between two independent Wilson intervals suggests
    wa, wb = wilson_interval(sum(a), 200), wilson_interval(sum(b), 200)
    assert r["ci95"][1] - r["ci95"][0] < (wb[1] - wb[0]) + (wa[1] - wa[0])
    assert paired_difference(a, b) == r  # deterministic


def test_bad_inputs():
    with pytest.raises(ValueError, match="same questions"):
        paired_difference([1, 0], [1])
    with pytest.raises(ValueError, match="0/1"):
        paired_difference([0.5], [1])
    r = paired_difference([], [])
    assert r["diff"] is None and r["p"] is None


def test_mean_interval_student_t():
    # 3 numbers 1, 2, 3: mean 2, sd 1, t(2) = 4.303: 2 +- 4.303 / sqrt(3)
    m = mean_interval([1.0, 2.0, 3.0, None])
    assert (m["mean"], m["k"], m["of"]) == (2.0, 3, 4)
    assert (m["lo"], m["hi"]) == pytest.approx((2 - 4.303 / math.sqrt(3), 2 + 4.303 / math.sqrt(3)))
    assert mean_interval([0.1, 0.9], bounds=(0.0, 1.0))["lo"] == 0.0  # clipped


# ---------------------------------------------------------------- coverage, simulated
# Per question: P(only a right), P(only b right) as in issue 23, and P(both right) (the interval
# depends on the concordant split too, so three splits are simulated). N questions per evaluation.
CASES = [(100, 0.00, 0.05), (100, 0.01, 0.05), (128, 0.04, 0.25), (384, 0.12, 0.18)]
BOTH = (0.0, 0.1, 0.3)
RUNS = 1500


def _old_interval(b_only, d, n):
    """The interval paired_difference gave before issue 23: Clopper-Pearson on b_only / d mapped to
    the difference with d held fixed ([0, 0] when d = 0)."""
    return _old_cached(b_only, d, n)


@functools.lru_cache(maxsize=None)
def _old_cached(b_only, d, n):
    if d == 0:
        return (0.0, 0.0)
    plo, phi = clopper_pearson(b_only, d)
    return (d * (2 * plo - 1) / n, d * (2 * phi - 1) / n)


def _tables(n, p_a, p_b, p_both, seed):
    """(RUNS, 4) seeded draws of (both, b only, a only, neither)."""
    rng = np.random.default_rng([seed, n])
    return rng.multinomial(n, [p_both, p_b, p_a, 1 - p_both - p_a - p_b], size=RUNS)


def _coverage(interval, tables, truth):
    hits = 0
    for t in tables.tolist():
        lo, hi = interval(*t)
        hits += lo <= truth <= hi
    return hits / len(tables)


@pytest.mark.parametrize("n, p_a, p_b", CASES)
def test_newcombe_covers_at_least_93_percent(n, p_a, p_b):
    for p_both in BOTH:
        cov = _coverage(newcombe_paired, _tables(n, p_a, p_b, p_both, seed=23), p_b - p_a)
        assert cov >= 0.93, (n, p_a, p_b, p_both, cov)


@pytest.mark.parametrize("n, p_a, p_b", CASES[:3])
def test_the_old_conditional_interval_fails_the_same_simulation(n, p_a, p_b):
    # (the fourth case, many discordant questions both ways, is where it did hold: ~95%)
    tables = _tables(n, p_a, p_b, 0.1, seed=23)
    cov = _coverage(lambda both, f, s, nei: _old_interval(f, f + s, n), tables, p_b - p_a)
    assert cov < 0.93, (n, p_a, p_b, cov)
