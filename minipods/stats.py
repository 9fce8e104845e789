"""Intervals and tests (not from the paper): one evaluation's accuracy (Wilson), two evaluations on the same
questions (Newcombe's paired interval, exact McNemar), and across training runs, where the seed is the unit
(Student-t over seeds, sign-flip p; ratios on the log scale). No torch, no scipy."""

from __future__ import annotations

import math

import numpy as np


# ---------------------------------------------------------------- one evaluation, two on the same questions
def wilson_interval(k: float, n: int, z: float = 1.96) -> tuple[float, float]:
    """95% Wilson score interval of one accuracy k/n (well behaved at 0 and 1)."""
    if n == 0:
        return (0.0, 0.0)
    p, d = k / n, 1 + z * z / n
    c = (p + z * z / (2 * n)) / d
    h = z * math.sqrt(max(p * (1 - p), 0.0) / n + z * z / (4 * n * n)) / d
    return (max(0.0, c - h), min(1.0, c + h))


def mcnemar_p(a_only: int, b_only: int) -> float:
    """Exact two-sided McNemar p-value: 2 P(X <= min) for X ~ Binomial(a_only + b_only, 1/2), at most 1."""
    d, k = a_only + b_only, min(a_only, b_only)
    return 1.0 if d == 0 else min(1.0, 2 * sum(math.comb(d, j) for j in range(k + 1)) / 2 ** d)


def newcombe_paired(both: int, first_only: int, second_only: int, neither: int,
                    z: float = 1.96) -> tuple[float, float]:
    """Newcombe's hybrid score interval (Stat Med 1998, method 10) for p1 - p2 on the same questions: the
    two Wilson intervals combined with phi, the paired outcomes' correlation (numerator reduced by N / 2
    towards 0; 0 when a margin is empty). Not [0, 0] when no question is discordant."""
    n = both + first_only + second_only + neither
    p1, p2 = (both + first_only) / n, (both + second_only) / n
    (l1, u1), (l2, u2) = wilson_interval(both + first_only, n, z), wilson_interval(both + second_only, n, z)
    margins = (both + first_only) * (second_only + neither) * (both + second_only) * (first_only + neither)
    num = both * neither - first_only * second_only
    num = num - n / 2 if num > n / 2 else (0.0 if num >= 0 else num)
    phi = num / math.sqrt(margins) if margins else 0.0
    d = p1 - p2
    lo = d - math.sqrt(max((p1 - l1) ** 2 - 2 * phi * (p1 - l1) * (u2 - p2) + (u2 - p2) ** 2, 0.0))
    hi = d + math.sqrt(max((u1 - p1) ** 2 - 2 * phi * (u1 - p1) * (p2 - l2) + (p2 - l2) ** 2, 0.0))
    return (max(-1.0, lo), min(1.0, hi))


def paired_difference(correct_a: list, correct_b: list, z: float = 1.96) -> dict:
    """b's accuracy minus a's on the same questions (0/1 each): n, acc_a, acc_b, diff, ci95, p, a_only, b_only."""
    if len(correct_a) != len(correct_b):
        raise ValueError(f"paired_difference needs the same questions: {len(correct_a)} vs {len(correct_b)} results")
    if any(float(x) not in (0.0, 1.0) for x in list(correct_a) + list(correct_b)):
        raise ValueError("paired_difference needs 0/1 correctness per question")
    a, b = [int(x) for x in correct_a], [int(x) for x in correct_b]
    n = len(a)
    a_only, b_only = sum(x > y for x, y in zip(a, b)), sum(y > x for x, y in zip(a, b))
    if n == 0:
        return {"n": 0, "acc_a": None, "acc_b": None, "diff": None, "ci95": (None, None), "p": None,
                "a_only": 0, "b_only": 0}
    both = sum(x and y for x, y in zip(a, b))
    return {"n": n, "acc_a": sum(a) / n, "acc_b": sum(b) / n, "diff": (b_only - a_only) / n,
            "ci95": newcombe_paired(both, b_only, a_only, n - both - a_only - b_only, z),
            "p": mcnemar_p(a_only, b_only), "a_only": a_only, "b_only": b_only}


# ---------------------------------------------------------------- across runs: the seed is the unit
MAX_EXACT = 16  # sign-flip p-values enumerate all 2^k patterns up to this many seeds (65,536); beyond, draw as many
# two-sided 97.5% quantiles of Student's t for 1..30 degrees of freedom (beyond: a Cornish-Fisher expansion)
T975 = [12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145,
        2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048,
        2.045, 2.042]


def t975(df: int) -> float:
    """Student's t two-sided 95% quantile for df degrees of freedom (the table, then Cornish-Fisher: within 1e-5)."""
    z = 1.959964
    return T975[df - 1] if df <= len(T975) else (z + (z**3 + z) / (4 * df) + (5 * z**5 + 16 * z**3 + 3 * z) / (96 * df**2)
                                                 + (3 * z**7 + 19 * z**5 + 17 * z**3 - 15 * z) / (384 * df**3))


def mean_interval(xs: list[float | None], bounds: tuple[float, float] = (-math.inf, math.inf)) -> dict:
    """Mean of the finite numbers in xs with its 95% Student-t interval, clipped to `bounds`:
    mean, lo, hi (None below two numbers), k (numbers used), of (len(xs))."""
    v = [float(x) for x in xs if x is not None and math.isfinite(float(x))]
    k = len(v)
    m = sum(v) / k if k else None
    if k < 2:
        return {"mean": m, "lo": None, "hi": None, "k": k, "of": len(xs)}
    sd = math.sqrt(sum((x - m) ** 2 for x in v) / (k - 1))
    h = t975(k - 1) * sd / math.sqrt(k)
    return {"mean": m, "lo": max(bounds[0], m - h), "hi": min(bounds[1], m + h), "k": k, "of": len(xs)}


def sign_flip_p(xs: list[float]) -> float | None:
    """Two-sided p of "the mean is 0": the share of sign patterns whose |mean| is at least the observed one; exact
    over all 2^k up to MAX_EXACT seeds (p >= 2 / 2^k: 0.0625 for 5), else (hits + 1) / (draws + 1) over 2^MAX_EXACT
    seeded draws (a Monte Carlo p, within ~0.002 at p = 0.05). None without seeds."""
    v = np.array([float(x) for x in xs if x is not None])
    k, draws = len(v), 2 ** min(len(v), MAX_EXACT)
    signs = 1 - 2 * ((np.arange(draws)[:, None] >> np.arange(k)) & 1) if k <= MAX_EXACT else \
        np.random.default_rng(0).choice((-1.0, 1.0), size=(draws, k))
    obs = abs(v.sum()) - 1e-12 * (1 + np.abs(v).sum())  # ties (e.g. flips of a zero) count as extreme
    hits = int((np.abs(signs @ v) >= obs).sum())
    return None if not k else hits / draws if k <= MAX_EXACT else (hits + 1) / (draws + 1)


def ratio_interval(ratios: list[float | None]) -> dict:
    """Geometric mean of per-seed ratios (e.g. speed-ups) with the 95% t-interval of their logs,
    exponentiated: ratio, lo, hi, k, of, and the sign-flip p of "log ratio 0"."""
    logs = [math.log(r) for r in ratios if r is not None and r > 0 and math.isfinite(r)]
    m, ex = mean_interval(logs), (lambda x: None if x is None else math.exp(x))
    return {"ratio": ex(m["mean"]), "lo": ex(m["lo"]), "hi": ex(m["hi"]), "k": m["k"], "of": len(ratios),
            "p": sign_flip_p(logs)}
