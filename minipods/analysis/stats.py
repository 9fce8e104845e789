"""Statistics over training runs: the seed is the unit of every comparison between arms, since the
run, not the question, varies most. The one-evaluation intervals (Wilson, Newcombe, McNemar) live in
minipods.evaluate and are re-exported here. Pure Python: no torch, no scipy.
"""

from __future__ import annotations

import itertools
import math

from minipods.evaluate import mcnemar_p, newcombe_paired, paired_difference, wilson_interval

__all__ = ["wilson_interval", "mcnemar_p", "newcombe_paired", "paired_difference", "mean_interval",
           "sign_flip_p", "ratio_interval"]

MAX_EXACT = 12  # sign-flip p-values enumerate 2^k patterns up to this many seeds (4,096)
# two-sided 97.5% quantiles of Student's t for 1..30 degrees of freedom (beyond: 1.96)
T975 = [12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145,
        2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048,
        2.045, 2.042]


def t975(df: int) -> float:
    """Student's t two-sided 95% quantile for df degrees of freedom (1.96 beyond the table)."""
    return T975[df - 1] if df <= len(T975) else 1.96


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
    """Exact two-sided p of "the mean is 0": the share of the 2^k sign patterns whose |mean| is at
    least the observed one (so p >= 2 / 2^k: 0.0625 for 5 seeds). None beyond MAX_EXACT or with none."""
    v = [float(x) for x in xs if x is not None]
    if not v or len(v) > MAX_EXACT:
        return None
    obs = abs(sum(v)) - 1e-12 * (1 + sum(map(abs, v)))  # ties (e.g. flips of a zero) count as extreme
    hits = sum(abs(sum(s * x for s, x in zip(signs, v))) >= obs for signs in itertools.product((1, -1), repeat=len(v)))
    return hits / 2 ** len(v)


def ratio_interval(ratios: list[float | None]) -> dict:
    """Geometric mean of per-seed ratios (e.g. speed-ups) with the 95% t-interval of their logs,
    exponentiated: ratio, lo, hi, k, of, and the sign-flip p of "log ratio 0"."""
    logs = [math.log(r) for r in ratios if r is not None and r > 0 and math.isfinite(r)]
    m = mean_interval(logs)
    ex = (lambda x: None if x is None else math.exp(x))
    return {"ratio": ex(m["mean"]), "lo": ex(m["lo"]), "hi": ex(m["hi"]), "k": m["k"], "of": len(ratios),
            "p": sign_flip_p(logs)}
