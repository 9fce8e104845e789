"""minipods.analysis.stats: paired_difference / clopper_pearson / wilson_interval, hand-computable cases."""

import math
import random

import pytest

from minipods.analysis.stats import clopper_pearson, paired_difference, wilson_interval


def test_clopper_pearson_closed_forms():
    # k = n: lo = (alpha/2)^(1/n); k = 0: hi = 1 - (alpha/2)^(1/n)
    assert clopper_pearson(5, 5) == (pytest.approx(0.025 ** (1 / 5), abs=1e-9), 1.0)
    assert clopper_pearson(0, 5) == (0.0, pytest.approx(1 - 0.025 ** (1 / 5), abs=1e-9))
    # k = 1 of 2: 1 - (1 - lo)^2 = 0.025, and symmetric
    lo, hi = clopper_pearson(1, 2)
    assert lo == pytest.approx(1 - math.sqrt(0.975), abs=1e-9) and hi == pytest.approx(math.sqrt(0.975), abs=1e-9)
    assert clopper_pearson(0, 0) == (0.0, 1.0)


def test_identical_results_differ_by_exactly_zero():
    a = [1, 0, 1, 1, 0, 0, 1, 0]
    r = paired_difference(a, list(a))
    assert (r["diff"], r["ci95"], r["a_only"], r["b_only"]) == (0.0, (0.0, 0.0), 0, 0)
    assert r["acc_a"] == r["acc_b"] == 0.5 and r["n"] == 8


def test_known_discordant_case():
    # 10 questions: both right on 2, both wrong on 3, b alone right on 5, a alone on none
    a = [1, 1, 0, 0, 0, 0, 0, 0, 0, 0]
    b = [1, 1, 0, 0, 0, 1, 1, 1, 1, 1]
    r = paired_difference(a, b)
    assert (r["acc_a"], r["acc_b"], r["diff"], r["a_only"], r["b_only"]) == (0.2, 0.7, 0.5, 0, 5)
    lo, hi = r["ci95"]
    # pi = b_only / d has the exact interval [0.025^(1/5), 1]; diff = d (2 pi - 1) / N
    assert lo == pytest.approx(5 * (2 * 0.025 ** 0.2 - 1) / 10, abs=1e-9) and hi == pytest.approx(0.5)
    assert lo < 0  # five discordant questions, all one way, are not yet significant at 95%
    # swapping the arms flips the sign and mirrors the interval
    s = paired_difference(b, a)
    assert s["diff"] == -0.5 and s["ci95"][0] == pytest.approx(-hi) and s["ci95"][1] == pytest.approx(-lo)


def test_more_discordant_pairs_make_it_significant_and_pairing_narrows_it():
    rng = random.Random(0)
    a = [int(rng.random() < 0.3) for _ in range(200)]
    b = [1 if x else int(rng.random() < 0.3) for x in a]  # b keeps every a-right question and gains more
    r = paired_difference(a, b)
    assert r["a_only"] == 0 and r["b_only"] > 20 and r["ci95"][0] > 0
    # the paired interval is narrower than the gap between two independent Wilson intervals suggests
    wa, wb = wilson_interval(sum(a), 200), wilson_interval(sum(b), 200)
    assert r["ci95"][1] - r["ci95"][0] < (wb[1] - wb[0]) + (wa[1] - wa[0])
    assert paired_difference(a, b) == r  # deterministic


def test_bad_inputs():
    with pytest.raises(ValueError, match="same questions"):
        paired_difference([1, 0], [1])
    with pytest.raises(ValueError, match="0/1"):
        paired_difference([0.5], [1])
    assert paired_difference([], [])["diff"] is None
