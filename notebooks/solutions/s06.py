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


SOLUTIONS = {"06.1": 0.0625, "06.2": sign_flip, "06.3": 1.6, "06.4": time_to_reach}

WHY = {
    "06.1": "Only the observed pattern and its mirror image (all signs flipped) reach |mean| when all differences "
            "share a sign: 2 / 2^5 = 0.0625. Five seeds can never give p < 0.05; ten runs can reach 0.002.",
    "06.2": "Under 'no difference' each run's difference is as likely negative as positive: the p is the share of "
            "the 2^k sign patterns at least as extreme, two-sided, ties included.",
    "06.3": "At 100% of GRPO's mean-curve peak GRPO's mean curve gets there at 4 h and PODS's at 2.5 h: 1.6x, below "
            "the paper's 1.7; at 99% it is 2.0x, at 99.5% 1.5x. Half-hour checkpoints make the reading a knife-edge.",
    "06.4": "The first evaluation within one standard error below the target: a curve's noise should not make an arm "
            "miss a target it sits on; the time is the evaluation's own, never interpolated.",
}
