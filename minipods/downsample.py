"""PODS down-sampling rules: choose m of the n scored rollouts to train on.

PODS (Xu et al., "Not All Rollouts are Useful", TMLR 2026) generates n rollouts per prompt (cheap,
parallel inference) but updates the policy on only m < n of them (expensive, memory-hungry training).
Section 3 keeps the subset with the largest reward variance ("max-variance down-sampling"): a strong,
contrastive signal for GRPO's group-normalised advantages. Baselines: the best m, a uniform random m.

Max-variance problem: given rewards r_1..r_n and m, find S with |S| = m that
maximises the population variance of {r_i : i in S}. Brute force is C(n, m).

Exchange lemma (the paper's Lemma: optimal subset = k lowest + m-k highest):
an optimal S never keeps a value strictly between two values it leaves out.
Say S keeps x with unused u < x < w, and x >= mu = mean(S) (else mirror it).
Swapping x for y = w moves a kept point away from the mean, and
    Var(S') - Var(S) = (y - x)/m * ((x - mu) + (y - mu) - (y - x)/m) > 0
for m >= 2 (for m = 1 every variance is 0). So S was not optimal. Hence, in
sorted order, S = {k lowest} u {m-k highest} for some k in 0..m.

Algorithm, O(n log n): sort once (stable), build prefix sums of r and r^2
(after subtracting the mean of all rewards, which limits cancellation in
E[r^2] - E[r]^2), evaluate all m+1 candidates in O(1) each, keep the best k.
Ties: the smallest k whose variance is within a tiny relative tolerance of the
maximum, i.e. prefer keeping high rewards.

Binary rewards (0/1, the usual verifiable-reward case): the variance of a
subset with p ones is p(1-p), so the rule keeps as balanced a split of 0s and
1s as is available; for odd m the tie-break keeps the extra 1."""

import numpy as np

RULES = ("max_variance", "max_reward", "random")


def _as_rewards(rewards):
    """1-D finite float64 numpy array from a list, numpy array or torch tensor."""
    if hasattr(rewards, "detach"):  # torch tensor, possibly on GPU / with grad
        rewards = rewards.detach().cpu().numpy()
    try:
        r = np.asarray(rewards, dtype=np.float64)
    except (TypeError, ValueError) as e:
        raise ValueError(f"rewards must be numbers, got {rewards!r:.200}") from e
    if r.ndim != 1:
        raise ValueError(f"rewards must be 1-D, got shape {r.shape}")
    if r.size == 0:
        raise ValueError("rewards must be non-empty, got 0 rewards")
    bad = np.flatnonzero(~np.isfinite(r))
    if bad.size:
        raise ValueError(f"rewards must be finite, got {r[bad[0]]} at index {bad[0]}")
    return r


def _check_m(m, n):
    # bool is an int subclass but m=True is surely a bug; floats like 3.0 are rejected too.
    if isinstance(m, bool) or not isinstance(m, (int, np.integer)):
        raise ValueError(f"m must be an integer, got {m!r}")
    if not 1 <= m <= n:
        raise ValueError(f"m must be in [1, n={n}], got m={m}")
    return int(m)


def subset_variance(rewards, idx):
    """Population variance (ddof=0) of rewards[idx]."""
    r = _as_rewards(rewards)
    idx = np.asarray(idx, dtype=np.int64)
    if idx.size == 0:
        raise ValueError("idx must be non-empty, got 0 indices")
    return float(np.var(r[idx]))


def max_variance(rewards, m):
    """Indices (ascending) of the m rollouts whose rewards have maximal population variance."""
    r = _as_rewards(rewards)
    n = r.size
    m = _check_m(m, n)
    order = np.argsort(r, kind="stable")
    s = r[order] - r.mean()  # centre: the subset sums below then cancel far less
    p1 = np.concatenate(([0.0], np.cumsum(s)))
    p2 = np.concatenate(([0.0], np.cumsum(s * s)))
    k = np.arange(m + 1)  # k lowest + (m - k) highest
    tot1 = p1[k] + (p1[n] - p1[n - m + k])
    tot2 = p2[k] + (p2[n] - p2[n - m + k])
    var = np.maximum(tot2 / m - (tot1 / m) ** 2, 0.0)
    best = var.max()
    # Float noise must not decide between equally good splits (e.g. 0/1 rewards),
    # so "ties" are within ~1e-9 relative, plus a rounding floor from the scale.
    tol = 1e-9 * best + 1e3 * np.finfo(np.float64).eps * float(np.max(s * s))
    k = int(np.flatnonzero(var >= best - tol)[0])
    keep = np.concatenate((order[:k], order[n - m + k:]))
    return sorted(keep.tolist())


def max_reward(rewards, m):
    """Indices (ascending) of the m highest rewards; among equal rewards the earlier index wins."""
    r = _as_rewards(rewards)
    m = _check_m(m, r.size)
    return sorted(np.argsort(-r, kind="stable")[:m].tolist())


def random_subset(rewards, m, generator=None):
    """Indices (ascending) of a uniformly random m-subset; `generator`: anything
    np.random.default_rng accepts (a Generator, advanced in place; a seed; None)."""
    r = _as_rewards(rewards)  # validated like the other rules, though values are unused
    m = _check_m(m, r.size)
    rng = np.random.default_rng(generator)
    return sorted(rng.choice(r.size, size=m, replace=False).tolist())


def downsample(rewards, m, rule, generator=None):
    """Apply a rule from RULES; `generator` is only used by "random"."""
    if rule == "max_variance":
        return max_variance(rewards, m)
    if rule == "max_reward":
        return max_reward(rewards, m)
    if rule == "random":
        return random_subset(rewards, m, generator)
    raise ValueError(f"unknown rule {rule!r}; expected one of {RULES}")


def select_groups(rewards, n, m, rule, generator=None):
    """Apply `rule` to every group of n consecutive rewards (rows group-major, as rollouts are laid
    out): the flat row indices of the m kept per group, in increasing order."""
    r = _as_rewards(rewards)
    if n < 1 or r.size % n:
        raise ValueError(f"{r.size} rewards do not split into groups of n = {n}")
    return [g * n + i for g in range(r.size // n) for i in downsample(r[g * n:(g + 1) * n], m, rule, generator)]
