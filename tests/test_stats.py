"""minipods.stats: the intervals against published values and exact small cases; the paired
interval's coverage simulated; and the seed-level interval's coverage in simulated studies where the
training run varies more than the question (where the pooled question-level interval under-covers)."""

import math
import random

import numpy as np
import pytest

from minipods.stats import (mcnemar_p, mean_interval, newcombe_paired, paired_difference, ratio_interval,
                                     sign_flip_p, t975, wilson_interval)

# Newcombe (1998), "Two-sided confidence intervals for the single proportion: comparison of seven
# methods", Stat Med 17:857, Table II: method 3 (Wilson score), 4 decimals.
SINGLE = [(81, 263, (0.2553, 0.3662)), (15, 148, (0.0624, 0.1605)), (0, 20, (0.0, 0.1611)), (1, 29, (0.0061, 0.1718))]


@pytest.mark.parametrize("k, n, wilson", SINGLE)
def test_wilson_matches_newcombe_1998(k, n, wilson):
    assert wilson_interval(k, n) == pytest.approx(wilson, abs=5e-5)


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
# Per question: P(only a right), P(only b right), and P(both right) (the interval
# depends on the concordant split too, so three splits are simulated). N questions per evaluation.
CASES = [(100, 0.00, 0.05), (100, 0.01, 0.05), (128, 0.04, 0.25), (384, 0.12, 0.18)]
BOTH = (0.0, 0.1, 0.3)
RUNS = 1500


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


def test_sign_flip_p_enumerates_every_sign_pattern():
    # 1, 2, 3: of the 8 sign patterns only +++ and --- reach |sum| 6
    assert sign_flip_p([0.01, 0.02, 0.03]) == 2 / 8
    # 5 seeds all one way: the smallest p five runs can give
    assert sign_flip_p([0.1, 0.2, 0.1, 0.3, 0.05]) == 2 / 32
    # 3, -1, -1 (observed |sum| 1): the 8 signed sums are 5, 3, 3, 1, -1, -3, -3, -5, all at least 1 in size
    assert sign_flip_p([3.0, -1.0, -1.0]) == 1.0
    assert sign_flip_p([]) is None
    assert sign_flip_p([1.0] * 16) == 2 / 2**16  # the largest exact enumeration


def test_beyond_exact_enumeration_the_sign_flip_p_is_a_monte_carlo_estimate():
    """A class of 20-80 students: 2^k patterns are too many, so seeded draws; the estimate stays near the t-test's
    p (which the sign-flip p approaches with many seeds), is never 0, and repeats."""
    rng = np.random.default_rng(5)
    for k in (17, 24, 40):
        x = rng.normal(0.3, 1.0, k).tolist()
        p = sign_flip_p(x)
        assert p == sign_flip_p(x) and 0 < p <= 1
        t = abs(np.mean(x)) / (np.std(x, ddof=1) / np.sqrt(k))  # the t-test's p, which the sign-flip p approaches
        assert abs(p - 2 * (1 - _t_cdf(t, k - 1))) < 0.03, (k, p)
    assert 0 < sign_flip_p([1.0] * 17) < 1e-4  # all one way: the exact p is 2 / 2^17; an estimate never says 0


def _t_cdf(t, df, n=20000):
    """Student's t CDF by numerical integration (no scipy in the requirements)."""
    xs = np.linspace(0, t, n)
    from math import gamma, pi, sqrt
    c = gamma((df + 1) / 2) / (sqrt(df * pi) * gamma(df / 2))
    return 0.5 + np.trapezoid(c * (1 + xs**2 / df) ** (-(df + 1) / 2), xs)


def test_t975_beyond_the_table_follows_the_t_distribution():
    for df in (31, 40, 80, 200):
        assert abs(_t_cdf(t975(df), df) - 0.975) < 1e-5, df
    assert t975(30) == 2.042 and t975(31) < t975(30) and t975(1000) > 1.96


def test_ratio_interval_is_a_t_interval_on_log_ratios():
    r = ratio_interval([2.0, 0.5, None])
    assert r["ratio"] == pytest.approx(1.0) and (r["k"], r["of"]) == (2, 3)
    # logs +-ln 2: sd = ln 2 * sqrt(2), half-width t(1) * sd / sqrt(2) = 12.706 ln 2
    assert (r["lo"], r["hi"]) == pytest.approx((2 ** -12.706, 2 ** 12.706))
    r = ratio_interval([0.879, 0.884, 1.205])  # the three per-seed speed-ups of the five-seed study
    assert (round(r["ratio"], 2), round(r["lo"], 2), round(r["hi"], 2)) == (0.98, 0.62, 1.53)


# ---------------------------------------------------------------- the seed is the unit, simulated
STUDIES, SEEDS, QUESTIONS = 2000, 5, 128


def _studies(seed=32):
    """Simulated two-arm studies with no arm effect: per seed, both arms answer the same questions
    (question difficulty d_i, shared), and each arm's training run adds its own offset r (a large
    between-run spread, as in the five-seed study where one arm's run collapsed and another's did not).
    P(correct) = sigmoid(-0.4 + r + d_i); a and b are exchangeable, so the true difference is 0."""
    rng = np.random.default_rng(seed)
    d = rng.normal(0.0, 1.5, size=(STUDIES, SEEDS, 1, QUESTIONS))
    r = rng.normal(0.0, 0.6, size=(STUDIES, SEEDS, 2, 1))
    p = 1 / (1 + np.exp(-(-0.4 + r + d)))
    return (rng.random(p.shape) < p).astype(int)  # (study, seed, arm, question)


def test_the_seed_level_interval_covers_and_the_pooled_one_does_not():
    correct = _studies()
    seed_hits = pooled_hits = flips = 0
    for study in correct:
        diffs = (study[:, 1].mean(axis=1) - study[:, 0].mean(axis=1)).tolist()
        m = mean_interval(diffs)
        seed_hits += m["lo"] <= 0.0 <= m["hi"]
        flips += sign_flip_p(diffs) <= 0.0625
        q = paired_difference(study[:, 0].ravel().tolist(), study[:, 1].ravel().tolist())
        pooled_hits += q["ci95"][0] <= 0.0 <= q["ci95"][1]
    assert 0.93 <= seed_hits / STUDIES <= 0.975, seed_hits / STUDIES
    assert pooled_hits / STUDIES < 0.8, pooled_hits / STUDIES  # 640 "independent" pairs: far too narrow
    assert flips / STUDIES <= 0.0625 + 0.015  # exact: it rejects a true "no effect" at most 2/32 of the time
