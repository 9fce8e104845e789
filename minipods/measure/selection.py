"""The bench's `select` part: max-variance down-sampling time for n = 16 ... 1,000,000.

The paper's selection is one sort plus a prefix-sum scan over k, O(n log n): the log-log slope of
time against n (the growth exponent) should sit near 1 once fixed per-call overhead stops dominating.
"""

from __future__ import annotations

import math

import numpy as np

from minipods.measure.common import best_seconds, fit_power_law, fmt_s


def part_select(sizes: list[int], seed: int = 0, quick: bool = False, m_frac: float = 0.25) -> dict:
    from minipods.downsample import max_variance
    rng = np.random.default_rng(seed)
    secs, ms = [], []
    for n in sizes:
        # correctness (0/1) + format bonus (0..0.1), like minipods.rewards.total_reward
        r = rng.integers(0, 2, n) + 0.025 * rng.integers(0, 5, n)
        m = max(1, int(n * m_frac))
        secs.append(best_seconds(lambda: max_variance(r, m), min_time=0.02 if quick else 0.1, rounds=2 if quick else 3))
        ms.append(m)
    k_all, _ = fit_power_law(sizes, secs)
    big = [(n, s) for n, s in zip(sizes, secs) if n >= 1024]
    k_big = fit_power_law(*zip(*big))[0] if len(big) >= 2 else float("nan")
    return {"sizes": list(sizes), "m": ms, "m_frac": m_frac, "seconds": secs, "exponent": k_all,
            "exponent_large_n": k_big}


def rows_select(r: dict) -> list[list[str]]:
    rows = [["select", f"max_variance n={n:,}, m={m:,}", fmt_s(s)] for n, m, s in zip(r["sizes"], r["m"], r["seconds"])]
    rows.append(["select", "growth exponent (log-log slope), all n", f"{r['exponent']:.2f}"])
    if math.isfinite(r["exponent_large_n"]):
        rows.append(["select", "growth exponent, n >= 1024", f"{r['exponent_large_n']:.2f}"])
    return rows
