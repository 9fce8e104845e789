import itertools
import math

import numpy as np
import pytest

from minipods.downsample import (
    RULES, downsample, max_reward, max_variance, random_subset, subset_variance,
)


def brute_force_max_var(r, m):
    """Largest population variance over all m-subsets (the reference)."""
    idx = np.array(list(itertools.combinations(range(len(r)), m)))
    return np.var(np.asarray(r, dtype=np.float64)[idx], axis=1).max()


def random_rewards(rng, n, kind):
    if kind == "binary":
        return rng.integers(0, 2, n).astype(float)
    if kind == "thirds":
        return rng.choice([0.0, 0.5, 1.0], n)
    if kind == "small_int":
        return rng.integers(-3, 4, n).astype(float)
    if kind == "format":  # correctness + format reward, like minipods.rewards.total_reward
        return rng.integers(0, 2, n) + 0.025 * rng.integers(0, 5, n)
    if kind == "float":
        return rng.normal(size=n)
    if kind == "offset":  # large common offset: tests the centring against cancellation
        return 1e6 + rng.normal(size=n)
    raise ValueError(kind)


KINDS = ("binary", "thirds", "small_int", "format", "float", "offset")


@pytest.mark.parametrize("kind", KINDS)
def test_max_variance_matches_brute_force(kind):
    rng = np.random.default_rng(sum(map(ord, kind)))
    for _ in range(40):
        n = int(rng.integers(1, 13))
        r = random_rewards(rng, n, kind)
        for m in range(1, n + 1):  # every m
            idx = max_variance(r, m)
            assert len(idx) == m and len(set(idx)) == m and idx == sorted(idx)
            assert all(0 <= i < n for i in idx)
            want = brute_force_max_var(r, m)
            assert math.isclose(subset_variance(r, idx), want, rel_tol=1e-9, abs_tol=1e-12), (r, m)


def test_max_variance_shape_of_solution():
    r = [5.0, 1.0, 3.0, 2.0, 4.0, 0.0]
    assert max_variance(r, 2) == [0, 5]  # min and max
    assert max_variance(r, 4) == [0, 1, 4, 5]  # values {5, 1, 4, 0}: 2 lowest + 2 highest
    assert max_variance(r, 6) == list(range(6))  # m == n keeps everything
    assert max_variance([3.0], 1) == [0]
    assert max_variance([2.0, 2.0, 2.0], 2) == [1, 2]  # all tied: k = 0, top of the stable sort


# (lo, hi): 0/1 rewards, and two-valued rewards whose equal-variance splits differ
# in floating point (1/3 is inexact), so the tie-break must not be left to rounding.
@pytest.mark.parametrize("lo, hi", [(0.0, 1.0), (1 / 3, 1.1), (0.025, 1.025)])
@pytest.mark.parametrize("n0, n1", [(0, 5), (5, 0), (1, 7), (7, 1), (4, 4), (3, 9), (10, 2), (5, 6)])
def test_max_variance_binary_counts(n0, n1, lo, hi):
    rng = np.random.default_rng(n0 * 100 + n1)
    r = rng.permutation(np.array([lo] * n0 + [hi] * n1))
    for m in range(1, n0 + n1 + 1):
        ones = int((r[max_variance(r, m)] == hi).sum())
        # balanced split, the extra one for odd m goes to the 1s, limited by what exists
        assert ones == min(n1, max(m - n0, (m + 1) // 2)), (n0, n1, m)


def test_max_reward():
    r = [0.1, 1.0, 0.5, 1.0, 0.0, 1.0]
    assert max_reward(r, 1) == [1]  # ties: earlier index wins
    assert max_reward(r, 2) == [1, 3]
    assert max_reward(r, 4) == [1, 2, 3, 5]
    assert max_reward(r, 6) == list(range(6))
    assert max_reward([-1.0, -2.0, -0.5], 2) == [0, 2]


def test_random_subset():
    r = np.zeros(5)
    assert random_subset(r, 3, 123) == random_subset(r, 3, 123)
    assert random_subset(r, 5, 1) == [0, 1, 2, 3, 4]
    g1, g2 = np.random.default_rng(7), np.random.default_rng(7)
    assert [random_subset(r, 2, g1) for _ in range(5)] == [random_subset(r, 2, g2) for _ in range(5)]
    # uniform: each index kept with prob m/n, each of the C(5,2) pairs with prob 1/10
    g = np.random.default_rng(0)
    draws = [tuple(random_subset(r, 2, g)) for _ in range(20_000)]
    counts = np.bincount(np.array(draws).ravel(), minlength=5) / len(draws)
    assert np.allclose(counts, 0.4, atol=0.02)
    pairs = {p: draws.count(p) / len(draws) for p in itertools.combinations(range(5), 2)}
    assert len(set(draws)) == 10 and all(abs(f - 0.1) < 0.015 for f in pairs.values())
    assert len(set(tuple(random_subset(r, 2)) for _ in range(200))) > 1  # None: fresh entropy


def test_downsample_dispatch():
    r = [0.0, 1.0, 0.0, 1.0, 1.0]
    assert RULES == ("max_variance", "max_reward", "random")
    assert downsample(r, 2, "max_variance") == max_variance(r, 2)
    assert downsample(r, 3, "max_reward") == [1, 3, 4]
    assert downsample(r, 2, "random", generator=5) == random_subset(r, 2, 5)


@pytest.mark.parametrize("rewards, m, match", [
    ([1.0, 2.0], 0, r"m=0"),
    ([1.0, 2.0], -1, r"m=-1"),
    ([1.0, 2.0], 3, r"n=2.*m=3"),
    ([1.0, 2.0], 1.5, r"1\.5"),
    ([1.0, 2.0], 2.0, r"2\.0"),
    ([1.0, 2.0], "2", r"'2'"),
    ([1.0, 2.0], True, r"True"),
    ([1.0, 2.0], None, r"None"),
    ([], 1, r"0 rewards"),
    ([[1.0, 2.0]], 1, r"shape \(1, 2\)"),
    (5.0, 1, r"shape \(\)"),
    ([1.0, float("nan"), 2.0], 1, r"nan at index 1"),
    ([1.0, 2.0, float("inf")], 1, r"inf at index 2"),
    ([1.0, -float("inf")], 1, r"-inf at index 1"),
    (["a", "b"], 1, r"'a'"),
])
@pytest.mark.parametrize("rule", RULES)
def test_errors(rewards, m, match, rule):
    with pytest.raises(ValueError, match=match):
        downsample(rewards, m, rule)


def test_unknown_rule_and_subset_variance():
    with pytest.raises(ValueError, match="'max_var'"):
        downsample([1.0, 2.0], 1, "max_var")
    with pytest.raises(ValueError, match="0 indices"):
        subset_variance([1.0, 2.0], [])
    assert subset_variance([0.0, 1.0, 0.0, 1.0], [0, 1]) == 0.25
    assert subset_variance([1.0, 2.0, 3.0], [0, 1, 2]) == pytest.approx(2 / 3)


def test_input_types():
    torch = pytest.importorskip("torch")
    r = [0.0, 1.0, 0.5, 1.0, 0.0, 0.25]
    want = max_variance(r, 3)
    assert max_variance(np.array(r), 3) == want
    assert max_variance(np.array(r, dtype=np.float32), 3) == want
    assert max_variance(torch.tensor(r), 3) == want
    assert max_variance(torch.tensor(r, requires_grad=True), 3) == want
    assert max_variance(torch.tensor([0, 1, 0, 1]), np.int64(2)) == [0, 3]  # first 0, last 1
    assert max_reward(torch.tensor(r), 2) == [1, 3]
    assert all(type(i) is int for i in max_variance(np.array(r), 3))


@pytest.mark.parametrize("kind", ["float", "binary"])
def test_large_n_is_exact(kind):
    # (its time for n up to 1e6 is measured by the bench: python -m minipods.bench --parts select)
    rng = np.random.default_rng(0)
    r = random_rewards(rng, 1_000_000, kind)
    s, n = np.sort(r), r.size
    for m in (16, 500_000):
        idx = max_variance(r, m)
        assert len(idx) == m == len(set(idx))
        kept = np.sort(r[idx])  # the k lowest and the m - k highest, for the best k
        k = int(np.argmax(kept != s[:m])) if (kept != s[:m]).any() else m
        np.testing.assert_array_equal(kept, np.concatenate((s[:k], s[n - m + k:])))
        var = [np.var(np.concatenate((s[:j], s[n - m + j:]))) for j in (k - 1, k, k + 1) if 0 <= j <= m]
        assert np.var(kept) >= max(var) * (1 - 2e-9)  # optimal up to the rule's tie tolerance (1e-9 relative)
    if kind == "binary":  # balanced split
        assert r[max_variance(r, 16)].sum() == 8
    else:  # m=2: the min and the max
        assert max_variance(r, 2) == sorted([int(r.argmin()), int(r.argmax())])
