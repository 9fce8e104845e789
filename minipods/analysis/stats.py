"""The intervals of minipods: one accuracy, two accuracies on the same questions, a mean over seeds.

Not from the paper (which reports single runs); what makes a small run readable honestly:
  * `wilson_interval(k, n)`: 95% interval of one accuracy k/n (well behaved at 0 and 1);
  * `paired_difference(correct_a, correct_b)`: accuracy of b minus a on the same questions, with
    an exact McNemar (Clopper-Pearson on the discordant questions) interval; used wherever two
    evaluations on the same questions are compared (train's last line, compare's summary);
  * `mean_interval(xs)`: mean and Student-t 95% interval of a few per-seed numbers.
Pure Python (math only): no torch, no scipy.
"""

from __future__ import annotations

import math

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


def paired_difference(correct_a: list, correct_b: list, alpha: float = 0.05) -> dict:
    """Accuracy of b minus accuracy of a on the same questions, with an exact McNemar interval.

    correct_a, correct_b: 0/1 per question, in the same question order. Only the discordant
    questions carry information about the difference: b_only (b right, a wrong) and a_only. Given
    d = a_only + b_only, b_only ~ Binomial(d, pi), and diff = d (2 pi - 1) / N; the Clopper-Pearson
    interval for pi maps to the interval for diff (exact, conditional on d; no resampling, so the
    same inputs always give the same interval). Returns n, acc_a, acc_b, diff, ci95 (lo, hi), a_only,
    b_only. Paired because both evaluations see the same questions: per-question noise cancels, so
    this interval is much narrower than two independent Wilson intervals would suggest.
    """
    if len(correct_a) != len(correct_b):
        raise ValueError(f"paired_difference needs the same questions: {len(correct_a)} vs {len(correct_b)} results")
    if any(float(x) not in (0.0, 1.0) for x in list(correct_a) + list(correct_b)):
        raise ValueError("paired_difference needs 0/1 correctness per question")
    a, b = [int(x) for x in correct_a], [int(x) for x in correct_b]
    n = len(a)
    a_only = sum(x == 1 and y == 0 for x, y in zip(a, b))
    b_only = sum(x == 0 and y == 1 for x, y in zip(a, b))
    d = a_only + b_only
    if n == 0:
        return {"n": 0, "acc_a": None, "acc_b": None, "diff": None, "ci95": (None, None), "a_only": 0, "b_only": 0}
    if d == 0:
        lo = hi = 0.0
    else:
        plo, phi = clopper_pearson(b_only, d, alpha)
        lo, hi = d * (2 * plo - 1) / n, d * (2 * phi - 1) / n
    return {"n": n, "acc_a": sum(a) / n, "acc_b": sum(b) / n, "diff": (b_only - a_only) / n, "ci95": (lo, hi),
            "a_only": a_only, "b_only": b_only}


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
