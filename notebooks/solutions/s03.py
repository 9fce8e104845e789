"""Notebook 03 (max-variance down-sampling): worked answers. SOLUTIONS is what `check` accepts; WHY says why."""

import numpy as np


def max_variance_subset(rewards, m):
    r = np.asarray(rewards, dtype=float)
    order = np.argsort(r, kind="stable")
    n = len(r)
    candidates = [np.concatenate([order[:k], order[n - m + k:]]) for k in range(m + 1)]  # k lowest + m-k highest
    best = max(candidates, key=lambda idx: np.var(r[idx]))
    return sorted(best.tolist())


def kept_advantages(rewards, n, kept):
    r = np.asarray(rewards, dtype=float)
    out = []
    for k in kept:
        group = r[[j for j in kept if j // n == k // n]]  # the prompt's kept rewards only
        spread = group.max() > group.min()
        out.append((r[k] - group.mean()) / (group.std(ddof=1) + 1e-4) if spread else 0.0)
    return np.array(out)


SOLUTIONS = {"03.1": 3, "03.2": max_variance_subset, "03.3": kept_advantages, "03.4": 2, "03.5": 0.185}

WHY = {
    "03.1": "With p ones among m kept the variance is (p/m)(1 - p/m): largest at p = 2 or 3 for m = 5 (0.24 both); "
            "the package breaks the tie towards the smallest k (fewest low rewards), so it keeps 3 right, 2 wrong.",
    "03.2": "The exchange lemma leaves only the m + 1 candidates 'k lowest + m - k highest'; np.var of each and the "
            "best one is the optimum (the package does the same scan with prefix sums in O(n log n)).",
    "03.3": "GRPO standardises within what the update trains on: the m kept rows of each prompt, with the sample std "
            "(divisor m - 1) and exact zeros for a kept group without spread (one row, or equal rewards).",
    "03.4": "Seeds 0-9 of random_subset draw no right answer twice (the check counts them again): each such step is "
            "silent for this prompt, about the 18% that C(11,4)/C(16,4) predicts.",
    "03.5": "Max-variance keeps a right and a wrong answer whenever the 16 contain both, so PODS is silent only when "
            "all 16 agree: 0.9^16 + 0.1^16 = 0.185, against 0.9^4 + 0.1^4 = 0.656 for GRPO's group of 4.",
}
