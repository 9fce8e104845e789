"""Notebook 06 (the paper's runs): worked answers. SOLUTIONS is what `check` accepts; WHY says why."""

import itertools
import math


def sign_flip(diffs):
    k = len(diffs)
    obs = abs(sum(diffs)) - 1e-12 * (1 + sum(map(abs, diffs)))  # float slack: ties count
    hits = sum(abs(sum(s * d for s, d in zip(signs, diffs))) >= obs for signs in itertools.product((1, -1), repeat=k))
    return hits / 2 ** k


def time_to_reach(curve, target, n):
    tol = math.sqrt(target * (1 - target) / n)  # one evaluation's standard error at the target
    return next((s for s, a in curve if a >= target - tol - 1e-12), None)


def time_averaged(curve, budget):
    pts = [(0.0, curve[0][1])] + list(curve)  # the first value from 0 s
    if pts[-1][0] < budget:
        pts.append((budget, pts[-1][1]))  # the last value until the budget
    area = 0.0
    for (t0, y0), (t1, y1) in zip(pts, pts[1:]):
        if t0 >= budget:
            break
        if t1 > budget:  # cut the segment that crosses the budget
            t1, y1 = budget, y0 + (y1 - y0) * (budget - t0) / (t1 - t0)
        area += (t1 - t0) * (y0 + y1) / 2  # a trapezoid
    return area / budget


SOLUTIONS = {"06.1": 0.0625, "06.2": sign_flip, "06.3": 1.0, "06.4": time_to_reach, "06.5": time_averaged}

WHY = {
    "06.1": "Only the observed pattern and its mirror image (all signs flipped) reach |mean| when all differences "
            "share a sign: 2 / 2^5 = 0.0625. Five seeds can never give p < 0.05; ten runs can reach 0.002.",
    "06.2": "Under 'no difference' each run's difference is as likely negative as positive: the p is the share of "
            "the 2^k sign patterns at least as extreme, two-sided, ties included.",
    "06.3": "At 97% of GRPO's mean-curve peak both mean curves get there at their first checkpoint, 1 h: 1.0x. At the "
            "peak itself 1.6x (4 h against 2.5 h), below the paper's 1.7; 1.5x at 99.5%, 2.0x at 99% and 98%. Targets "
            "a point or two apart give 1.0x to 2.0x: on half-hour checkpoints the reading is a knife-edge.",
    "06.4": "The first evaluation within one standard error below the target: a curve's noise should not make an arm "
            "miss a target it sits on; the time is the evaluation's own, never interpolated.",
    "06.5": "Trapezoids between evaluations, the first value held from 0 s and the last to the budget, the crossing "
            "segment cut at the budget: every evaluation counts, and no threshold, grid or censoring is needed.",
}
