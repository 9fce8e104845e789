"""The intervals of minipods: one accuracy, two accuracies on the same questions, a mean over seeds.

Not from the paper (which reports single runs); what makes a small run readable honestly:
  * `wilson_interval(k, n)`: 95% interval of one accuracy k/n (well behaved at 0 and 1);
  * `paired_difference(correct_a, correct_b)`: accuracy of b minus a on the same questions, with
    Newcombe's hybrid score interval (`newcombe_paired`) and the exact McNemar p-value (`mcnemar_p`);
    used wherever two evaluations on the same questions are compared (train's last line, compare's
    summaries, the seed summaries);
  * `clopper_pearson(k, n)`: the exact interval of one proportion (a reference; not used by the above);
  * `mean_interval(xs)`: mean and Student-t 95% interval of a few per-seed numbers;
  * `bootstrap_ratio(xs, ys)`: a ratio of per-seed sums (time-to-target speed-ups) with a percentile
    bootstrap interval.
Pure Python (math, random): no torch, no scipy.
"""

from __future__ import annotations

import math
import random

# two-sided 97.5% quantiles of Student's t for 1..30 degrees of freedom (beyond: 1.96)
T975 = [12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145,
        2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048,
        2.045, 2.042]


def wilson_interval(k: float, n: int, z: float = 1.96) -> tuple[float, float]:
    """95% Wilson score interval for a proportion k/n (well behaved at 0 and 1): the interval of
    one accuracy. Two accuracies on the same questions are compared with `paired_difference`."""
    if n == 0:
        return (0.0, 0.0)
    p = k / n
    d = 1 + z * z / n
    c = (p + z * z / (2 * n)) / d
    h = z * math.sqrt(max(p * (1 - p), 0.0) / n + z * z / (4 * n * n)) / d
    return (max(0.0, c - h), min(1.0, c + h))


def _binom_tail(k: int, n: int, p: float, upper: bool) -> float:
    """P(X >= k) (upper) or P(X <= k) for X ~ Binomial(n, p), summed in log space (no overflow)."""
    if p <= 0.0:
        return 1.0 if (k <= 0 if upper else True) else 0.0
    if p >= 1.0:
        return 1.0 if (True if upper else k >= n) else 0.0
    js = range(k, n + 1) if upper else range(k + 1)
    lp, lq = math.log(p), math.log1p(-p)
    return sum(math.exp(math.lgamma(n + 1) - math.lgamma(j + 1) - math.lgamma(n - j + 1) + j * lp + (n - j) * lq)
               for j in js)


def clopper_pearson(k: int, n: int, alpha: float = 0.05) -> tuple[float, float]:
    """Exact (Clopper-Pearson) 1-alpha interval for a binomial proportion k/n, by bisection on the
    binomial tails: lo solves P(X >= k | lo) = alpha/2, hi solves P(X <= k | hi) = alpha/2."""
    if n == 0:
        return (0.0, 1.0)

    def solve(f):  # f is increasing in p; the p where f(p) = alpha/2
        a, b = 0.0, 1.0
        for _ in range(60):
            mid = (a + b) / 2
            a, b = (mid, b) if f(mid) < alpha / 2 else (a, mid)
        return (a + b) / 2
    lo = 0.0 if k == 0 else solve(lambda p: _binom_tail(k, n, p, upper=True))
    # P(X <= k | p) falls as p grows; alpha - it rises and equals alpha/2 where the tail is alpha/2
    hi = 1.0 if k == n else solve(lambda p: alpha - _binom_tail(k, n, p, upper=False))
    return (lo, hi)


def mcnemar_p(a_only: int, b_only: int) -> float:
    """Exact two-sided McNemar p-value: under "no difference" each of the d = a_only + b_only
    discordant questions goes either way with probability 1/2, so p = P(X <= min) + P(X >= max) for
    X ~ Binomial(d, 1/2), at most 1 (1 when d = 0). Integer arithmetic: exact for any d."""
    d, k = a_only + b_only, min(a_only, b_only)
    if d == 0:
        return 1.0
    return min(1.0, 2 * sum(math.comb(d, j) for j in range(k + 1)) / 2 ** d)


def newcombe_paired(both: int, first_only: int, second_only: int, neither: int,
                    z: float = 1.96) -> tuple[float, float]:
    """Newcombe's hybrid score interval (Newcombe 1998, Stat Med 17:2635, method 10; "square-and-add"
    in Fagerland, Lydersen & Laake 2014) for p1 - p2, the difference of two proportions measured on
    the same units: p1 = (both + first_only) / N, p2 = (both + second_only) / N.

    Each proportion gets its Wilson interval (l1, u1), (l2, u2); the two are combined with
    phi, the correlation of the paired outcomes, so a strong pairing narrows the interval:
        lo = D - sqrt((p1 - l1)^2 - 2 phi (p1 - l1)(u2 - p2) + (u2 - p2)^2)
        hi = D + sqrt((u1 - p1)^2 - 2 phi (u1 - p1)(p2 - l2) + (p2 - l2)^2)
    with phi = (both * neither - first_only * second_only) / sqrt(product of the four margins),
    that numerator reduced by N / 2 towards 0 when positive (Newcombe's correction; 0 within N / 2)
    and phi = 0 when a margin is empty. Unlike an interval conditional on the discordant count d,
    it accounts for d varying from sample to sample: it is not [0, 0] when d = 0, and its bound
    reaches past the observed difference when all discordant questions go one way."""
    n = both + first_only + second_only + neither
    p1, p2 = (both + first_only) / n, (both + second_only) / n
    l1, u1 = wilson_interval(both + first_only, n, z)
    l2, u2 = wilson_interval(both + second_only, n, z)
    margins = (both + first_only) * (second_only + neither) * (both + second_only) * (first_only + neither)
    num = both * neither - first_only * second_only
    num = num - n / 2 if num > n / 2 else (0.0 if num >= 0 else num)
    phi = num / math.sqrt(margins) if margins else 0.0
    d = p1 - p2
    lo = d - math.sqrt(max((p1 - l1) ** 2 - 2 * phi * (p1 - l1) * (u2 - p2) + (u2 - p2) ** 2, 0.0))
    hi = d + math.sqrt(max((u1 - p1) ** 2 - 2 * phi * (u1 - p1) * (p2 - l2) + (p2 - l2) ** 2, 0.0))
    return (max(-1.0, lo), min(1.0, hi))


def paired_difference(correct_a: list, correct_b: list, z: float = 1.96) -> dict:
    """Accuracy of b minus accuracy of a on the same questions: a 95% interval and the exact McNemar test.

    correct_a, correct_b: 0/1 per question, in the same question order. The interval is Newcombe's
    hybrid score interval (`newcombe_paired`), whose coverage holds near 0 and 1 (tests/test_stats.py
    simulates it); p is the exact McNemar p-value (`mcnemar_p`), the test of "any difference" from the
    discordant questions b_only (b right, a wrong) and a_only. The two answer different questions
    and can disagree at the edge (an interval just touching 0 with p just under 0.05). Returns n,
    acc_a, acc_b, diff, ci95 (lo, hi), p, a_only, b_only. Paired because both evaluations see the same
    questions: per-question noise cancels, so this interval is narrower than two independent Wilson
    intervals would suggest. Deterministic (no resampling).
    """
    if len(correct_a) != len(correct_b):
        raise ValueError(f"paired_difference needs the same questions: {len(correct_a)} vs {len(correct_b)} results")
    if any(float(x) not in (0.0, 1.0) for x in list(correct_a) + list(correct_b)):
        raise ValueError("paired_difference needs 0/1 correctness per question")
    a, b = [int(x) for x in correct_a], [int(x) for x in correct_b]
    n = len(a)
    a_only = sum(x == 1 and y == 0 for x, y in zip(a, b))
    b_only = sum(x == 0 and y == 1 for x, y in zip(a, b))
    if n == 0:
        return {"n": 0, "acc_a": None, "acc_b": None, "diff": None, "ci95": (None, None), "p": None,
                "a_only": 0, "b_only": 0}
    both = sum(x == 1 and y == 1 for x, y in zip(a, b))
    ci = newcombe_paired(both, b_only, a_only, n - both - a_only - b_only, z)
    return {"n": n, "acc_a": sum(a) / n, "acc_b": sum(b) / n, "diff": (b_only - a_only) / n, "ci95": ci,
            "p": mcnemar_p(a_only, b_only), "a_only": a_only, "b_only": b_only}


def mean_interval(xs: list[float | None], bounds: tuple[float, float] = (-math.inf, math.inf)) -> dict:
    """Mean of the numbers in xs (None = missing, e.g. a seed that never reached the target) and
    its 95% Student-t interval mean +- t(k-1) * sd / sqrt(k), clipped to `bounds` (an accuracy
    stays in [0, 1]); with one number the interval is None. Returns mean, lo, hi, k (numbers used),
    of (len(xs))."""
    v = [float(x) for x in xs if x is not None and math.isfinite(float(x))]
    k = len(v)
    if k == 0:
        return {"mean": None, "lo": None, "hi": None, "k": 0, "of": len(xs)}
    m = sum(v) / k
    if k == 1:
        return {"mean": m, "lo": None, "hi": None, "k": 1, "of": len(xs)}
    sd = math.sqrt(sum((x - m) ** 2 for x in v) / (k - 1))
    h = (T975[k - 2] if k - 1 <= len(T975) else 1.96) * sd / math.sqrt(k)
    return {"mean": m, "lo": max(bounds[0], m - h), "hi": min(bounds[1], m + h), "k": k, "of": len(xs)}


def bootstrap_ratio(xs: list[float], ys: list[float], reps: int = 2000, seed: int = 0) -> dict:
    """sum(xs) / sum(ys) of paired numbers (e.g. per-seed times of two arms) with a percentile
    bootstrap 95% interval: the pairs are resampled with replacement `reps` times (seeded). A zero
    denominator gives inf. Returns ratio, lo, hi (None with fewer than two pairs), k (pairs)."""
    import random

    k = len(xs)
    if k != len(ys):
        raise ValueError(f"bootstrap_ratio needs paired numbers, got {k} and {len(ys)}")

    def ratio(idx):
        den = sum(ys[i] for i in idx)
        return sum(xs[i] for i in idx) / den if den > 0 else math.inf

    if k == 0:
        return {"ratio": None, "lo": None, "hi": None, "k": 0}
    if k == 1:
        return {"ratio": ratio([0]), "lo": None, "hi": None, "k": 1}
    rng = random.Random(seed)
    rs = sorted(ratio([rng.randrange(k) for _ in range(k)]) for _ in range(reps))
    return {"ratio": ratio(range(k)), "lo": rs[int(0.025 * reps)], "hi": rs[min(reps - 1, int(0.975 * reps))], "k": k}
