# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 03 · Max-variance down-sampling: the proof and the algorithm
#
# > * **You will learn:** (1) the exchange lemma: the best m of n rewards are the k lowest plus the m − k highest; (2) the O(n log n) k-scan, checked against brute force; (3) what each rule keeps of the gradient, and why PODS is silent only when all n agree.
# > * **Comes first:** 02.
# > * **Background:** mean, variance and the sample standard deviation; GRPO's group-standardised advantage (Shao et al. 2024, *DeepSeekMath*, Sec. 4.1); the cosine between two vectors as "how much of a direction is kept".
# > * **Time here** (written by `scripts/run_notebooks.py` from the run that made this page, 2026-12-05: AMD EPYC, cpu family 23 model 1, 2 threads): full mode 8 min 39 s (the last cell's 519 s), of it section 8 (what each rule keeps of the gradient) 8 min 29 s.
# > * **You should see:** in section 5, "max_variance == brute force on ... (group, m) cases".
#
# **Question.** Which m of the n rollouts should the update keep, how is the max-variance subset found fast, and how much of the full-n gradient does each rule keep?
#
# PODS keeps $m$ of the $n$ rollouts of each prompt for the update. The paper's rule
# (Xu, Savani, Fang, Kolter, *Not All Rollouts are Useful: Down-Sampling Rollouts in LLM Reinforcement Learning*, TMLR 2026, Sec. 3) keeps the subset whose rewards have the **largest variance**: GRPO
# standardises rewards within the kept group, so what it learns from are the *differences* between kept
# rewards, and the max-variance subset is the most contrastive one — the best and the worst rollouts.
# This notebook proves that the optimum has a simple shape, derives the $O(n \log n)$ algorithm in
# `minipods.downsample.max_variance`, checks it against brute force, and compares it with the
# max-reward and random rules.
#
# **What needs a model.** Sections 1–7 are about reward arrays and need none. Sections 8–9 load
# SmolLM2-135M-Instruct: section 8 measures what each rule keeps of the *gradient*, and a gradient needs
# a policy to differentiate and real rollouts whose rewards differ; section 9 reuses those rollouts'
# rewards. Generating them and one backward pass per rollout take most of this notebook's time (section
# 8 prints how long).
#
# **Set-up.** The first cell imports minipods (installed with `pip install -e .` in the repository:
# scripts/setup.sh does it) and this folder's helpers, `lessons.py` (figures and timing tools; Jupyter
# starts the kernel in the notebook's own folder). On Colab or another fresh runtime, first run
# docs/gpu.md's install cell ("On a Colab T4": clone into `/content/minipods`,
# `pip install -r requirements-colab.txt`, `pip install --no-deps -e .`) and restart the runtime once;
# the first cell then works in the clone's `notebooks/` folder. Without minipods it stops with one line
# saying how to install it.
# Everything here runs on the CPU, on a GPU runtime too (`DEVICE = "cpu"`): what this notebook
# measures is a CPU.

# %%
import os, sys, time, warnings
from pathlib import Path

if "google.colab" in sys.modules and Path("/content/minipods/notebooks").is_dir():
    os.chdir("/content/minipods/notebooks")  # Colab, after docs/gpu.md's install cell: work in the clone's notebooks/
try:
    import minipods
    import lessons  # this folder's figures and timing tools
except ImportError as e:
    raise SystemExit(f"{e.name} not found: run `pip install -e .` in the minipods repository and open this notebook "
                     "from its notebooks/ folder (on Colab: docs/gpu.md's install cell, then restart)") from None
import inspect, itertools, math

import numpy as np
import torch

from minipods import downsample
from minipods.downsample import max_variance, max_reward, random_subset, subset_variance

DEVICE = "cpu"  # this notebook times a CPU: on a GPU runtime too, its models stay on the CPU
SMALL = os.environ.get("MINIPODS_NB_SMALL") == "1"  # tiny sizes (the test suite sets this)
warnings.filterwarnings("ignore", category=FutureWarning)
T0 = time.perf_counter()
torch.manual_seed(0)
print(f"{'SMALL' if SMALL else 'full'} mode | torch {torch.__version__} | {torch.get_num_threads()} CPU threads | "
      f"models on {DEVICE}" + (" (a GPU is present and left alone)" if torch.cuda.is_available() else ""))

# %% [markdown]
# ## 1. The problem
#
# Given rewards $r_1,\dots,r_n$ and $1 \le m \le n$, find
#
# $$S^\star \in \arg\max_{S \subseteq \{1,\dots,n\},\ |S| = m} \operatorname{Var}(S),\qquad
# \operatorname{Var}(S) = \frac1m \sum_{i\in S} (r_i - \mu_S)^2,\quad \mu_S = \frac1m\sum_{i\in S} r_i .$$
#
# (Population variance; with $|S| = m$ fixed, the sample variance has the same maximiser.) Brute force
# enumerates $\binom{n}{m}$ subsets — for the paper's $n=64$, $m=16$ that is:

# %%
print(f"C(64, 16) = {math.comb(64, 16):.3e} subsets per prompt")

# %% [markdown]
# ## 2. The exchange lemma
#
# Take a subset $S$ with mean $\mu$, a kept value $x$ and a left-out value $y$, and swap them:
# $S' = S \setminus \{x\} \cup \{y\}$. Write $\delta = y - x$. Using
# $\operatorname{Var}(S) = \frac1m\sum_{S} r^2 - \mu^2$: the sum of squares changes by $y^2 - x^2$ and
# the mean moves to $\mu' = \mu + \delta/m$, so
#
# $$
# \begin{aligned}
# \operatorname{Var}(S') - \operatorname{Var}(S)
# &= \frac{y^2 - x^2}{m} - \big(\mu'^2 - \mu^2\big)
#  = \frac{(y-x)(y+x)}{m} - \frac{2\mu\delta}{m} - \frac{\delta^2}{m^2} \\
# &= \frac{\delta}{m}\Big((x-\mu) + (y-\mu) - \frac{\delta}{m}\Big)
#  = \underbrace{\frac{(y-\mu)^2 - (x-\mu)^2}{m}}_{\text{gain in squared deviation}}
#  \;-\; \underbrace{\frac{\delta^2}{m^2}}_{\text{the mean follows}} .
# \end{aligned}
# $$
#
# **Lemma (moving a kept point outward on its own side raises the variance).** If $m \ge 2$ and
# either $\mu \le x < y$ or $y < x \le \mu$, then $\operatorname{Var}(S') > \operatorname{Var}(S)$.
#
# *Proof.* Case $\mu \le x < y$: $\delta > 0$ and $(x-\mu)+(y-\mu) = \delta + 2(x-\mu) \ge \delta$, so
#
# $$\operatorname{Var}(S') - \operatorname{Var}(S) \;\ge\; \frac{\delta}{m}\Big(\delta - \frac{\delta}{m}\Big) \;=\; \frac{(m-1)\,\delta^2}{m^2} \;>\; 0 .$$
#
# Case $y < x \le \mu$: $\delta < 0$ and $(x-\mu)+(y-\mu) - \frac{\delta}{m} = \delta + 2(x-\mu) - \frac{\delta}{m} \le \frac{(m-1)\delta}{m} < 0$;
# multiplying by $\frac{\delta}{m} < 0$ gives the same bound $\frac{(m-1)\delta^2}{m^2} > 0$. $\blacksquare$
#
# **The side matters.** "Further from the mean" alone is *not* enough: in $S=\{0, 1\}$ ($\mu = 0.5$,
# $\operatorname{Var}=0.25$) replacing $x=1$ by $y=-0.6$ moves the point from distance $0.5$ to $1.1$
# but gives $\{0, -0.6\}$ with $\operatorname{Var} = 0.09$. The formula agrees:
# $\frac{-1.6}{2}\big(0.5 - 1.1 + 0.8\big) = -0.16$. For $m = 1$ every variance is $0$.

# %%
rng = np.random.default_rng(0)
for _ in range(2000):  # the swap identity, on random subsets
    m = int(rng.integers(2, 9)); S = rng.normal(size=m); x_i = int(rng.integers(m)); y = rng.normal() * 2
    mu, x, d = S.mean(), S[x_i], y - S[x_i]
    S2 = S.copy(); S2[x_i] = y
    assert np.isclose(np.var(S2) - np.var(S), d / m * ((x - mu) + (y - mu) - d / m))
    assert np.isclose(np.var(S2) - np.var(S), ((y - mu) ** 2 - (x - mu) ** 2) / m - d ** 2 / m ** 2)
    if (mu <= x < y) or (y < x <= mu):
        assert np.var(S2) - np.var(S) >= (m - 1) * d ** 2 / m ** 2 - 1e-12
print("counter-example: Var{0,1} =", np.var([0, 1]), "-> Var{0,-0.6} =", round(np.var([0, -0.6]), 4))

# %% [markdown]
# ## 3. Hence: the $k$ lowest plus the $m-k$ highest
#
# **Corollary.** For $m \ge 2$, an optimal $S$ never keeps a value *strictly between* two values it
# leaves out.
#
# *Proof.* Suppose $S$ keeps $x$ and leaves out $u < x < w$. If $x \ge \mu_S$, swap $x \to w$
# ($\mu_S \le x < w$); otherwise $x < \mu_S$, swap $x \to u$ ($u < x \le \mu_S$). By the lemma the
# variance strictly increases, so $S$ was not optimal. $\blacksquare$
#
# So with $\ell_- = \min$ and $\ell_+ = \max$ of the left-out values, every kept value is
# $\le \ell_-$ or $\ge \ell_+$: all left-out values lie between the low kept ones and the high kept ones.
# Sorting the rewards $r_{(1)} \le \dots \le r_{(n)}$, the kept values are therefore the $k$ smallest and
# the $m-k$ largest for some $k$ (equal values are interchangeable and do not change the variance):
#
# $$\max_{|S|=m} \operatorname{Var}(S) = \max_{k=0,\dots,m} \operatorname{Var}\Big(\{r_{(1)},\dots,r_{(k)}\} \cup \{r_{(n-m+k+1)},\dots,r_{(n)}\}\Big).$$
#
# Only $m+1$ candidates instead of $\binom nm$. (For $m=1$ all variances are $0$ and any $k$ is optimal.)

# %% [markdown]
# **Exercise 03.1 (predict, then run).** Sixteen rollouts, ten right (reward 1) and six wrong (0); the update
# keeps m = 5. Predict how many right answers max-variance keeps, then run the next cell.

# %%
from exercises import check
ones_prediction = None  # your prediction: how many of the 5 kept rewards are 1

# %%
import numpy as np
from minipods.downsample import max_variance, subset_variance

r = np.array([1.0] * 10 + [0.0] * 6)
keep = max_variance(r, 5)
print(f"max_variance keeps {r[keep].tolist()} (variance {subset_variance(r, keep):.3f})")

check("03.1", ones_prediction)

# %% [markdown]
# ## 4. The $O(n\log n)$ algorithm
#
# 1. Sort the rewards: $s = \operatorname{sort}(r)$ — $O(n \log n)$.
# 2. Prefix sums $A_j = \sum_{i<j} s_i$ and $B_j = \sum_{i<j} s_i^2$, $j = 0..n$ — $O(n)$.
# 3. For each $k = 0..m$, the candidate's sums are
#    $T_1 = A_k + (A_n - A_{n-m+k})$ and $T_2 = B_k + (B_n - B_{n-m+k})$, and
#    $\operatorname{Var}_k = T_2/m - (T_1/m)^2$ — $O(1)$ each, $O(m)$ in all.
# 4. Keep the best $k$.
#
# Total $O(n \log n)$, dominated by the sort. Two numerical details in the package: the rewards are
# centred by their overall mean first (variance is shift-invariant, and $\mathbb E[r^2]-\mathbb E[r]^2$
# cancels badly when all rewards share a large offset), and near-ties between candidates are broken
# towards the smallest $k$ (keeping more high rewards). Here is the package's implementation:

# %%
print(inspect.getsource(downsample.max_variance))

# %% [markdown]
# A worked example: the $m+1$ candidates for one group, their variances, and what `max_variance` picks.

# %%
r = np.array([0.0, 1.1, 0.025, 0.05, 1.075, 0.0, 0.1, 1.1])   # correctness + format rewards
m = 4
order = np.argsort(r, kind="stable")
for k in range(m + 1):
    idx = np.concatenate([order[:k], order[len(r) - m + k:]])
    print(f"k={k}: keep {sorted(r[idx].tolist())}  Var = {subset_variance(r, idx):.4f}")
keep = max_variance(r, m)
print("max_variance keeps indices", keep, "values", r[keep].tolist(), f"Var = {subset_variance(r, keep):.4f}")


# %% [markdown]
# ## 5. Check against brute force
#
# On random groups of several kinds (binary, correctness+format like ours, Gaussian, and Gaussian with a
# large offset), for every $m$, the variance of the subset `max_variance` returns must equal the
# brute-force maximum over all $\binom nm$ subsets.

# %%
def brute_force(r, m):
    combos = np.array(list(itertools.combinations(range(len(r)), m)))
    return np.var(r[combos], axis=1).max()

kinds = {
    "binary": lambda n: rng.integers(0, 2, n).astype(float),
    "correct+format": lambda n: rng.integers(0, 2, n) + 0.025 * rng.integers(0, 5, n),
    "gaussian": lambda n: rng.normal(size=n),
    "offset 1e6": lambda n: 1e6 + rng.normal(size=n),
}
rng = np.random.default_rng(0)
checked = 0
for kind, draw in kinds.items():
    for _ in range(10 if SMALL else 60):
        nn = int(rng.integers(1, 11 if SMALL else 14))
        r = draw(nn)
        for m in range(1, nn + 1):
            keep = max_variance(r, m)
            assert len(keep) == m == len(set(keep))
            assert np.isclose(subset_variance(r, keep), brute_force(r, m), rtol=1e-9, atol=1e-12), (kind, r, m)
            checked += 1
print(f"max_variance == brute force on {checked} (group, m) cases")

# %% [markdown]
# ### Binary rewards
#
# With 0/1 rewards, $a$ ones and $b = n - a$ zeros, a subset with $p$ ones has variance
# $\frac pm\big(1 - \frac pm\big)$, largest when $p$ is as close to $m/2$ as the counts allow:
# $\max(0, m-b) \le p \le \min(a, m)$. So max-variance keeps a **balanced** set of correct and incorrect
# rollouts (for odd $m$ the package's tie-break keeps the extra correct one), and all of the scarcer
# kind when there are fewer than $m/2$ of it. If $a = 0$ or $a = n$ every subset has variance 0.

# %%
for nn, m in [(8, 4), (8, 3), (16, 5)]:
    for a in range(nn + 1):
        r = np.array([1.0] * a + [0.0] * (nn - a))
        p = int(r[max_variance(r, m)].sum())
        p_star = int(np.clip(math.ceil(m / 2), max(0, m - (nn - a)), min(a, m)))
        assert p == p_star, (nn, m, a, p, p_star)
print("binary case: ones kept = clip(ceil(m/2), max(0, m-b), min(a, m)) for every a")
ones_kept = [int(np.array([1.0] * a + [0.0] * (8 - a))[max_variance([1.0] * a + [0.0] * (8 - a), 4)].sum()) for a in range(9)]
print("n=8, m=4, a = 0..8 ones -> ones kept:", ones_kept)


# %% [markdown]
# **Exercise 03.2 (implement).** Write the max-variance rule from sections 3 and 4: sort once, try the m + 1
# candidates "the k lowest plus the m − k highest" (k = 0..m), return the indices of the best. The check
# compares the variance of your subset with `minipods.downsample.max_variance`'s on hundreds of groups
# (binary, correctness + format, Gaussian, offset, ties, all equal, every m from 1 to n).

# %%
from exercises import check
import numpy as np

def max_variance_subset(rewards, m):
    """Indices of m of the rewards with the largest population variance (any of equally good subsets)."""
    raise NotImplementedError("03.2: your code here")

check("03.2", max_variance_subset)

# %% [markdown]
# ## 6. Selection time grows like $n \log n$
#
# Timing `max_variance` with $m = n/4$ for growing $n$ (left), and brute force for small $n$ (right).
# The times are this process's CPU seconds (`time.process_time`), not wall-clock seconds: on a shared CPU
# other jobs stretch the wall clock of a call but not the CPU time it uses (on an idle core, one thread:
# the same number). They are still noisy: each point is the fastest of a few repeats (the median is
# printed beside it). The cost per $n\log_2 n$ shows the shape: large for small $n$, where fixed Python and
# numpy call overheads dominate, then roughly flat once the sort dominates (rising a little when the
# arrays outgrow the CPU caches). The cell prints that constant for every $n$ and extrapolates to a
# million rollouts.

# %%
ns = [2 ** k for k in range(6, 17 if SMALL else 21)]
bf_ns = list(range(6, 15 if SMALL else 19, 2))
t6 = lessons.selection_times(max_variance, brute_force, ns, bf_ns, rng)
lessons.plot_selection_times(t6)
fast, fast_med, bf, bf_fast = t6["fast"], t6["fast_median"], t6["bf"], t6["bf_fast"]
per = [1e9 * t / (k * math.log2(k)) for k, t in zip(ns, fast)]  # ns per n log2 n: flat where the sort dominates
print("n:                 ", [f"2^{int(math.log2(k))}" for k in ns])
print("fastest, CPU ms:   ", [f"{1e3 * t:.3f}" for t in fast])
print("median, CPU ms:    ", [f"{1e3 * t:.3f}" for t in fast_med])
print("t / (n log2 n), ns:", [f"{c:.1f}" for c in per])
t_million = per[-1] * 1e-9 * 1e6 * math.log2(1e6)
print(f"at the largest n = 2^{int(math.log2(ns[-1]))}: {1e3 * fast[-1]:.1f} ms; at that cost per n log2 n, "
      f"n = 10^6 would take {t_million:.2f} s")
print(f"brute force at n = {bf_ns[-1]}: {bf[-1]:.3f} s, {bf[-1] / bf_fast[-1]:.0f}x max_variance's {1e3 * bf_fast[-1]:.3f} ms")
if not SMALL:  # timing claims: checked on the full run only
    assert per[0] > per[-1]        # small n: fixed overheads dominate the cost per element
    assert t_million < 1.0         # the card: well under a second for a million rollouts
    assert bf[-1] > 10 * bf_fast[-1]

# %% [markdown]
# ## 7. What the three rules keep
#
# The same group of $n=16$ rollouts (correctness + format rewards), $m = 4$:
#
# * **max-variance** (the paper's rule): the extremes — best and worst — and the largest spread;
# * **max-reward**: the top $m$; once $m$ or more rollouts are correct with the same format, the kept
#   rewards are equal, so every advantage is 0 and the update learns nothing from this prompt;
# * **random**: a uniform draw of $m$; the kept rewards are right on average (their expected mean is the
#   group's mean), but any one draw can miss the few correct answers — the cell prints how likely that
#   is for this group.
#
# The advantages are those GRPO would use, computed on the kept subset by `grpo.group_advantages`.

# %%
from minipods.grpo import group_advantages

r = np.array([1.1, 0.0, 0.05, 1.1, 0.0, 0.1, 1.075, 0.025, 0.0, 1.1, 0.05, 0.0, 1.1, 0.025, 0.1, 0.0])
m = 4
rules = {"max_variance": max_variance(r, m), "max_reward": max_reward(r, m), "random": random_subset(r, m, 0)}
for name, keep in rules.items():
    adv = group_advantages(torch.tensor(r[keep]), torch.zeros(m, dtype=torch.long))
    print(f"{name:12s} keeps {r[keep].tolist()}  Var {subset_variance(r, keep):.4f}  advantages {[round(a, 2) for a in adv.tolist()]}")
    assert subset_variance(r, keep) <= subset_variance(r, rules["max_variance"]) + 1e-12
assert subset_variance(r, rules["max_reward"]) == 0  # four equal top rewards: no signal
n_right = int((r >= 1).sum())
p_miss = math.comb(len(r) - n_right, m) / math.comb(len(r), m)
print(f"a random {m} of these {len(r)} keeps none of the {n_right} correct answers with probability "
      f"C({len(r) - n_right},{m})/C({len(r)},{m}) = {p_miss:.2f}")
lessons.plot_kept(r, rules)

# %% [markdown]
# GRPO divides by the kept group's standard deviation, so the *scale* of the reward differences is
# normalised away: a kept group that differs only by a 0.025 format bonus gets the same advantages as
# one that differs by a correct answer. *Which* rollouts are kept decides what the update pushes towards.

# %%
one = torch.zeros(4, dtype=torch.long)
a_format = group_advantages(torch.tensor([0.0, 0.025, 0.0, 0.0]), one)
a_correct = group_advantages(torch.tensor([0.0, 1.0, 0.0, 0.0]), one)
print("format-only difference:", [round(v, 3) for v in a_format.tolist()])
print("correctness difference:", [round(v, 3) for v in a_correct.tolist()])
assert torch.allclose(a_format, a_correct, atol=0.02)

# %% [markdown]
# **Exercise 03.3 (implement).** The update standardises each prompt's rewards over the *kept* rows, not over
# all n. Write `kept_advantages(rewards, n, kept)`. The check compares with
# `minipods.grpo.group_advantages` on the kept rows over random batches (m = 1, m = n, all-equal groups).

# %%
from exercises import check
import numpy as np
from minipods.downsample import select_groups

def kept_advantages(rewards, n, kept):
    """Advantages (len(kept),) of the kept rows. rewards (P*n,): prompt g owns rows g*n .. g*n + n - 1; kept: the
    flat indices of the m rows kept per prompt (ascending). Each kept reward minus the mean of its prompt's kept
    rewards, divided by their sample std (divisor m - 1) + 1e-4; exactly 0 where a prompt's kept rewards are equal."""
    raise NotImplementedError("03.3: your code here")

rewards = np.array([1.1, 0.0, 0.05, 1.1, 0.0, 0.1, 1.075, 0.025,   0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0])
kept = select_groups(rewards, 8, 4, "max_variance")  # 2 prompts x 8 rollouts, 4 kept each
print("kept rows", kept, "rewards", rewards[kept].tolist())

check("03.3", kept_advantages)

# %% [markdown]
# **Exercise 03.4 (observe).** The random rule keeps a uniform draw of m = 4 of section 7's sixteen rollouts.
# Change `SEED` from 0 to 9, rerun each time, and count: at how many of these ten seeds does it keep no right
# answer (no reward >= 1)? Compare with the probability the section printed.

# %%
from exercises import check
import numpy as np
from minipods.downsample import random_subset

r = np.array([1.1, 0.0, 0.05, 1.1, 0.0, 0.1, 1.075, 0.025, 0.0, 1.1, 0.05, 0.0, 1.1, 0.025, 0.1, 0.0])
SEED = 0  # change me: 0, 1, ..., 9
keep = random_subset(r, 4, SEED)
print(f"seed {SEED}: random keeps {r[keep].tolist()}: {int((r[keep] >= 1).sum())} right")
seeds_without_correct = None  # your answer: at how many of the seeds 0-9 are none of the kept right?

check("03.4", seeds_without_correct)

# %% [markdown]
# ## 8. What each rule keeps of the gradient
#
# This is the section that needs a model. The paper argues that max-variance keeps the strongest
# *contrastive* signal; here we measure how much of the full-$n$ update direction each rule keeps. On one
# fixed pool of $n$ real SmolLM2 rollouts per prompt (synthetic word problems, binary correctness
# rewards), `minipods.analysis.gradients` computes the GRPO gradient of the LoRA weights for
#
# * the **full pool**: all $n$ rollouts, advantages standardised over the $n$;
# * the **$m$-subset each rule keeps**: advantages standardised within the kept $m$ (what `grpo_update`
#   trains on), for max-variance, max-reward and 200 seeded random draws.
#
# **Settings: the `--small` preset's, not the paper's.** Notebooks 01 and 02 sample as the paper does
# (LoRA rank 64, temperature 0.9). This section asks what each rule keeps of the update that the
# repository's CPU runs apply (`python -m minipods.train --small`, and `--preset laptop` and `--preset class`,
# whose studies notebook 05 reads), so the model is set up as they set it (`minipods.presets.PRESETS["small"]`, printed
# below): LoRA rank 16 with alpha 32, their CPU-sized adapter, and temperature 0.7, because sampled at 0.9
# the 135M model rarely finishes a correct answer (the preset's own note): most pools would be all wrong,
# silent, with no gradient to compare. The gradients take the log-probabilities at that temperature, as the update does.
# One difference: 96 new tokens, not the preset's 64. An answer cut off before its final number earns
# nothing; training teaches the policy to answer within 64 tokens, but this pool comes from the untrained
# model, whose answers often run longer (the cell counts them). (Alpha scales every LoRA gradient alike,
# so no cosine or norm ratio below depends on it.)

# %%
from minipods.analysis import gradients
from minipods.data import build_prompt, synthetic_problems
from minipods.fast.rollouts import generate_rollouts
from minipods.model import load_policy
from minipods.rewards import score_completions
from minipods.presets import PRESETS

SP = PRESETS["small"]  # the --small preset: model, LoRA and temperature (see above)
print(f"--small: {SP['model']}, LoRA rank {SP['lora_r']} alpha {SP['lora_alpha']}, T {SP['temperature']}, "
      f"{SP['max_new_tokens']} new tokens, data {SP['data']}")
P8, N8, NEW8, MS8 = (2, 6, 40, [2, 4]) if SMALL else (6, 16, 96, [2, 4, 8])
t8 = time.perf_counter()
model, tok = load_policy(SP["model"], lora_r=SP["lora_r"], lora_alpha=SP["lora_alpha"], device=DEVICE)  # fp32
items = synthetic_problems(P8, seed=3)
torch.manual_seed(0)  # N8 sampled rollouts per question, from the fast engine (the plain engine's distribution)
pool_ro = generate_rollouts(model, tok, [build_prompt(tok, it["question"]) for it in items], N8,
                            max_new_tokens=NEW8, temperature=SP["temperature"], batch_size=16)
scores = score_completions(pool_ro.texts, [it["gold"] for it in items for _ in range(N8)])
pool_r = torch.tensor(scores["reward"])                     # (P8 * N8,) correctness + format (never earned here)
correct = np.array(scores["correct"]).reshape(P8, N8)       # (P8, N8) 0/1
print("\n".join(f"prompt {g}: rewards {pool_r[g * N8:(g + 1) * N8].tolist()}" for g in range(P8)))
long = (pool_ro.completion_mask.sum(1) > SP["max_new_tokens"]).numpy()
print(f"{P8} x {N8} rollouts in {time.perf_counter() - t8:.0f} s; longer than {SP['max_new_tokens']} tokens: "
      f"{long.sum()} of {long.size}, among them {int(correct.ravel()[long].sum())} of the {int(correct.sum())} correct")

# %% [markdown]
# With one update epoch the loss is linear in the advantages, so a subset's gradient is
# $\sum_{i\in S} c_i u_i$, with $u_i$ the gradient of rollout $i$ alone and $c_i = A_i^S / N_S$ (kept
# advantage over kept tokens). One backward pass per rollout gives the $n \times n$ Gram matrix
# $K_{ij} = u_i \cdot u_j$, and every subset's cosine and norm then follow from $K$. The tests check
# this route against the gradient taken directly through `grpo.grpo_loss`. (LoRA's $B$ starts at zero,
# so this is the gradient of a first update: only $B$ receives one.)
#
# The table gives, for each $m$ and rule, the cosine of the kept subset's gradient to the full-$n$
# gradient, the variance of the kept rewards (what max-variance maximises), the gradient's norm relative
# to the full-$n$ one, and how often the kept subset is silent, each the mean over the non-silent pools.
# The random rule is read two ways. One draw $S$ (what a training step uses): the mean of the 200 draws'
# cosines. Its expected update direction: with $\bar c = \frac{1}{200}\sum_d c^{S_d}$ the draws'
# average coefficients, the average gradient is $\sum_i \bar c_i u_i$, whose cosine to the full-$n$
# gradient $\sum_i c_i u_i$ is $\bar c^\top K c \,/\, \sqrt{\bar c^\top K \bar c \; c^\top K c}$. That
# is not the mean of the draws' cosines. The cell redraws `compare_rules`' subsets (its generator per
# $m$) to compute both, and the last line of each block gives the cosines per pool.

# %%
t_grad = time.perf_counter()
pool = gradients.gradient_pool(model, pool_ro, pool_r, temperature=SP["temperature"])  # n backward passes per prompt
res = gradients.compare_rules(pool, MS8, draws=200, seed=0)
live = ~res["silent_pool"]
print(f"{P8 * N8} per-rollout gradients in {time.perf_counter() - t_grad:.0f} s (section 8 in all: "
      f"{time.perf_counter() - t8:.0f} s); silent pools (all rewards equal, no gradient at all): "
      f"{int((~live).sum())} of {P8}")
kept_var = {m8: {rule: np.full(P8, np.nan) for rule in gradients.RULES} for m8 in MS8}  # mean over a rule's subsets
avg_cos = {m8: np.full(P8, np.nan) for m8 in MS8}                                        # random's average direction
for m8 in MS8:
    for rule in gradients.RULES:
        rng8 = np.random.default_rng([0, m8])  # compare_rules' generator for (seed 0, m): the same draws
        for g in range(P8):
            K, r_g, tok_g = pool.gram[g], pool.rewards[g], pool.tokens[g]
            subs = gradients.rule_subsets(r_g, m8, rule, 200, rng8)  # drawn for every pool, as compare_rules does
            if not live[g]:
                continue
            kept_var[m8][rule][g] = np.mean([subset_variance(r_g, s_) for s_ in subs])
            if rule == "random":
                c_full = gradients.coefficients(r_g, tok_g, range(N8))
                cs = [gradients.coefficients(r_g, tok_g, s_) for s_ in subs]
                avg_cos[m8][g] = gradients.gram_cosine(K, np.mean(cs, axis=0), c_full)
                assert np.isclose(np.mean([gradients.gram_cosine(K, c_, c_full) for c_ in cs]),
                                  res["m"][m8]["random"]["cos"][g])  # the same draws as compare_rules
norm_ratio = {m8: res["m"][m8]["max_variance"]["norm"] / np.where(live, res["full_norm"], 1) for m8 in MS8}
per_pool = lambda x: "[" + ", ".join(f"{c:.2f}" for c in x[live]) + "]"  # noqa: E731
for m8 in MS8:
    print(f"m = {m8} of n = {N8} (means over the {int(live.sum())} non-silent pools)")
    print(f"  {'rule':18s} {'cos to full-n':>13s} {'kept reward var':>16s} {'|g|/|g full|':>13s} {'silent':>7s}")
    for rule, v in res["m"][m8].items():
        print(f"  {'random, one draw' if rule == 'random' else rule:18s} {v['cos_mean']:13.2f} "
              f"{np.nanmean(kept_var[m8][rule]):16.3f} {v['norm_ratio_mean']:13.2f} {v['silent_frac']:7.2f}")
    print(f"  {'random, mean of 200':18s} {np.nanmean(avg_cos[m8]):13.3f}   <- the average gradient over the draws")
    print(f"  per pool, cosines: max_variance {per_pool(res['m'][m8]['max_variance']['cos'])} | random one draw "
          f"{per_pool(res['m'][m8]['random']['cos'])} | random mean of 200 {per_pool(avg_cos[m8])}; "
          f"max_variance |g|/|g full| {per_pool(norm_ratio[m8])}")

# %% [markdown]
# The same cosines per prompt (left: each dot one prompt with a non-silent pool; random as the mean of its
# draws' cosines, with the 10–90% range of single draws as a bar) and the subset gradient's norm relative
# to the full-$n$ gradient's (right). Below the figure, the cell states and checks the comparison per $m$.

# %%
lessons.plot_gradient_cosines(res, MS8, N8, avg_cos)  # black diamonds: random's average over its draws
if not live.any():
    print("every pool is silent (all rewards equal): no gradient to keep -- rerun with more prompts or rollouts")
for m8 in MS8:
    mv, one = (res["m"][m8][rule]["cos"][live] for rule in ("max_variance", "random"))
    avg = avg_cos[m8][live]
    print(f"m = {m8}, per pool: max_variance keeps more of the full-n direction than one random draw on "
          f"{int(np.sum(mv > one))} of {int(live.sum())}; random's average over 200 draws keeps more than "
          f"max_variance on {int(np.sum(avg > mv))}; max_variance's gradient is larger than the full pool's on "
          f"{int(np.sum(norm_ratio[m8][live] > 1))}")
    assert all(np.all(np.abs(r8["cos"][live]) <= 1 + 1e-9) for r8 in res["m"][m8].values())
    assert not live.any() or res["m"][m8]["max_variance"]["silent_frac"] == 0.0  # never silent where the pool is not
    assert np.all(mv > one) and np.all(avg > mv)  # on every pool: more than one draw keeps, less than the draws' average
    assert all(np.all(kept_var[m8]["max_variance"][live] >= kept_var[m8][rule][live] - 1e-12) for rule in gradients.RULES)
    assert np.all(norm_ratio[m8][live] > 1)  # on every pool a larger gradient than the full pool's (below)
from minipods.grpo import group_advantages

adv2 = group_advantages(torch.tensor([1.0, 0.0]), torch.tensor([0, 0]))  # m = 2 kept: one right, one wrong
print(f"m = 2, rewards (1, 0): advantages {adv2[0]:+.2f}, {adv2[1]:+.2f} ((r - mean) / sample std, std = 1/sqrt(2))")
assert torch.allclose(adv2, torch.tensor([0.5, -0.5]) * 2 ** 0.5, atol=1e-3)

# %% [markdown]
# How to read it. The three rules keep the same *number* of rollouts but not the same signal.
#
# * **Max-reward** keeps the top $m$: when fewer than $m$ answers are correct it keeps all of them plus
#   wrong ones (much like max-variance), but whenever $m$ or more are correct the kept group is all
#   correct and silent — cosine 0, norm 0.
# * **One random draw** can miss the rare correct answer (the grey bars' spread, the silent column), so
#   one draw keeps little of the direction; max-variance keeps more than one draw on every pool at every $m$ (asserted).
# * **Max-variance is biased away from the full-$n$ gradient.** The random rule's gradient averaged over
#   its draws points almost exactly along the full-$n$ gradient (not exactly: each draw re-standardises
#   its advantages by its own std, and a silent draw contributes nothing), while max-variance's gradient
#   is off it at every $m$: the "random, mean of 200" cosine (the figure's black diamonds) is above
#   max-variance's (blue) on every pool (both printed above, and asserted). The reason is what it keeps: the extremes. With one correct answer
#   among $n$, $m = 2$ keeps that answer and one particular wrong answer (the first in sort order) with
#   advantages $\pm 1/\sqrt{2} \approx \pm 0.71$ (the sample std of two rewards 1 and 0 is $1/\sqrt{2}$;
#   printed and asserted above), where the full-$n$ gradient contrasts the correct answer with *all* the wrong
#   ones. And its error is not noise that averages away: on a given pool it keeps the same subset every
#   time. Training takes one subset per step, not the average, so against what a step actually uses
#   max-variance wins; but it is not an estimate of the full-$n$ update.
# * **That is not what the paper claims for it.** The paper chooses max-variance to keep the subset with
#   the **most reward variance**, the most diverse, contrastive rewards: the strongest learning signal per
#   kept rollout (the "kept reward var" column: on every prompt at least as large as any other rule's, by
#   construction, asserted), not the full-$n$ direction. Whether that biased but strong update trains
#   better than a nearly unbiased but noisy one is an empirical question, which notebook 05 and the studies in
#   docs/results.md measure.
# * **Norms**: a kept group of $m$ balanced rewards gives each rollout an advantage of $\pm\sqrt{(m-1)/m}$ (0.71 at $m = 2$, 0.94 at $m = 8$) and
#   divides by the tokens of $m$ rollouts, not $n$, so a non-silent subset's gradient is typically *larger*
#   than the full pool's (for max-variance: on every pool here, asserted); a large norm with a cosine below 1 is a strong push
#   partly in another direction.
#
#
# **How far a few pools carry.** Every check above holds on each non-silent pool separately (the cell
# counts them: in a full run a handful, in SMALL mode one or two), not only on their average. They are
# properties of how the rules choose from a given pool (max-variance always keeps the same extremes;
# random's draws average out to nearly the full pool), so a few pools can show them; how *large* the
# gaps are across prompts, models and temperatures a handful of pools cannot say.

# %% [markdown]
# ## 9. When groups go silent
#
# A prompt with pass rate $p$ gives a group of $n$ binary rewards that is all wrong with probability
# $(1-p)^n$ and all right with probability $p^n$: then every advantage is 0 and the prompt contributes
# nothing. Notebook 02 drew the formula; here we check it against the pool above. For each $n \le N$ we
# count, exactly, the fraction of the $\binom{N}{n}$ subgroups of each prompt's pool that are all equal
# (`gradients.observed_silent_fraction`) and compare with $\overline{p^n + (1-p)^n}$ from each prompt's
# pass rate (`gradients.predicted_silent_fraction`).

# %%
ns9 = list(range(1, N8 + 1))
curve = gradients.silent_curve(correct, ns9)
print("pass rates per prompt:", [round(float(p), 3) for p in curve["pass_rate"]])
m9 = 4 if N8 >= 4 else 2
pods_silent = curve["observed"][N8 - 1]  # max-variance keeps unequal rewards whenever the n have any
grpo_silent = curve["observed"][m9 - 1]
print(f"silent groups: GRPO n = m = {m9}: {grpo_silent:.2f} | PODS n = {N8} -> m = {m9}: {pods_silent:.2f}")
for p_row in correct:  # PODS's kept subset is silent exactly when its whole pool is
    assert (np.ptp(p_row[max_variance(p_row, m9)]) == 0) == (np.ptp(p_row) == 0)
assert pods_silent <= grpo_silent + 1e-12
assert curve["observed"][-1] <= curve["predicted"][-1] + 1e-12  # at n = N only an all-equal pool is silent
print(f"at n = N = {N8}: observed {curve['observed'][-1]:.2f}, predicted {curve['predicted'][-1]:.2f}")
print(f"a hard prompt, p = 0.05: a group of {m9} is silent with probability {0.95 ** m9 + 0.05 ** m9:.2f}, "
      f"a group of {N8} {0.95 ** N8 + 0.05 ** N8:.2f}")

lessons.plot_silent_curve(curve, m9, f"silent groups, {P8} prompts x {N8} rollouts")

# %% [markdown]
# Observed and predicted part at large $n$ because subgroups are drawn *without* replacement from a
# finite pool: at $n = N$ only an all-equal pool is silent, so there the observed fraction cannot exceed
# the prediction (asserted); and the pass rates are themselves estimated from the same $N$ samples. The
# lesson holds either way: for a hard prompt ($p = 0.05$) the cell prints how much more often a group of
# $m$ is silent than a group of $N$. Max-variance keeps a
# correct and a wrong answer whenever the $n$ generated contain both, so PODS ($n \to m$) is silent only
# as often as a group of $n$ — it trains on $m$ but *listens* to $n$.

# %% [markdown]
# **Exercise 03.5 (predict, then run).** A hard prompt with pass rate p = 0.1. GRPO samples n = m = 4
# rollouts; PODS samples n = 16 and keeps m = 4 by max-variance. Predict the probability that PODS's kept
# group is silent (all rewards equal), then run the next cell.

# %%
from exercises import check
silent_prediction = None  # your prediction: P(PODS's kept group of 4 is silent), n = 16, p = 0.1

# %%
from minipods.analysis.gradients import predicted_silent_fraction

for n in (4, 16):
    print(f"n = {n:2d}: all {n} rewards equal with probability {predicted_silent_fraction(0.1, n):.3f}")

check("03.5", silent_prediction)

# %% [markdown]
# **Takeaways.** Exchanging a kept reward for a more extreme one *on the same side of the kept mean*
# always raises the variance, so the optimum is "$k$ lowest + $m-k$ highest". That turns a
# $\binom nm$ search into a sort, two prefix sums and an $(m+1)$-way scan — negligible next to
# generating or training on rollouts. For binary rewards it simply balances correct and incorrect answers.
# What it keeps is the largest reward variance, the paper's learning signal, and not the full-$n$ gradient:
# its update points away from the full-$n$ direction, which the average of random draws follows closely,
# while beating the one random draw a training step would take (section 8).
#
# **On a card.**
#
# * Max-variance optimum = k lowest + m−k highest rewards: sort + prefix sums, O(n log n); well under a second for 10⁶ rollouts (section 6 prints the extrapolation).
# * Binary rewards: it keeps a balanced mix of right and wrong answers.
# * All-equal kept rewards = a silent group: zero gradient. Max-reward goes silent once m answers are right; max-variance never, if the n differ.
# * Max-variance is biased away from the full-n gradient: the random rule's gradient averaged over many draws points almost along it, max-variance's does not (section 8 prints both cosines and asserts the order). What it maximises is the kept rewards' variance, the paper's learning signal, not the full-n direction.
# * One random draw, what a training step uses, keeps less of the full-n direction than max-variance (asserted), and can miss the rare correct answer. Max-variance involves no luck.
# * PODS trains on m but listens to n: silent only when all n agree.

# %%
print(f"notebook ran in {time.perf_counter() - T0:.0f} s ({'SMALL' if SMALL else 'full'} mode)")
