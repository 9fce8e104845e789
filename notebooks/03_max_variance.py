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
# **Question.** Which m of the n rollouts should the update keep, how is the max-variance subset found fast, and how much of the full-n gradient does each rule keep?
#
# **Time here**: a few minutes in full mode on a 2-core CPU, under a minute or two in small mode; the last cell prints this run's total.
#
# PODS keeps $m$ of the $n$ rollouts of each prompt for the update. The paper's rule
# (Xu, Savani, Fang, Kolter, *Not All Rollouts are Useful: Down-Sampling Rollouts in LLM Reinforcement Learning*, TMLR 2026, Sec. 3) keeps the subset whose rewards have the **largest variance**: GRPO
# standardises rewards within the kept group, so what it learns from are the *differences* between kept
# rewards, and the max-variance subset is the most contrastive one — the best and the worst rollouts.
# This notebook proves that the optimum has a simple shape, derives the $O(n \log n)$ algorithm in
# `minipods.downsample.max_variance`, checks it against brute force, and compares it with the
# max-reward and random rules. No model is needed.

# %%
import os, time, warnings

import minipods  # installed by scripts/setup.sh (pip install -e .)

import numpy as np
import torch
import matplotlib.pyplot as plt

warnings.filterwarnings("ignore", category=FutureWarning)
SMALL = os.environ.get("MINIPODS_NB_SMALL") == "1"  # tiny sizes (the test suite sets this)
T0 = time.perf_counter()
torch.manual_seed(0)
print(f"{'SMALL' if SMALL else 'full'} mode | torch {torch.__version__} | {torch.get_num_threads()} CPU threads")
import inspect, itertools, math
from minipods import downsample
from minipods.downsample import max_variance, max_reward, random_subset, subset_variance

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
#
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
# ## 6. Selection time grows like $n \log n$
#
# Timing `max_variance` with $m = n/4$ for growing $n$ (left), and brute force for small $n$ (right).
# Timings on a shared CPU are noisy: each point is the fastest of a few repeats (the median is printed
# beside it). The cost per $n\log_2 n$ shows the shape: large for small $n$, where fixed Python and
# numpy call overheads dominate, then roughly flat once the sort dominates (rising a little when the
# arrays outgrow the CPU caches). The cell prints that constant for every $n$ and extrapolates to a
# million rollouts.

# %%
def timings(fn, repeat=5):
    """(fastest, median) seconds of `repeat` calls."""
    ts = []
    for _ in range(repeat):
        t = time.perf_counter(); fn(); ts.append(time.perf_counter() - t)
    return min(ts), float(np.median(ts))

ns = [2 ** k for k in range(6, 17 if SMALL else 21)]
fast, fast_med = [], []
for nn in ns:
    r = rng.random(nn)
    t_min, t_med = timings(lambda: max_variance(r, nn // 4), repeat=3 if nn > 2 ** 16 else 5)
    fast.append(t_min); fast_med.append(t_med)
bf_ns = list(range(6, 15 if SMALL else 19, 2))
bf = [timings(lambda: brute_force(rng.random(k), k // 2), repeat=2)[0] for k in bf_ns]
bf_fast = [timings(lambda: max_variance(rng.random(k), k // 2))[0] for k in bf_ns]

fig, (a1, a2) = plt.subplots(1, 2, figsize=(11, 3.8))
a1.loglog(ns, fast, "o-", label="max_variance (m = n/4), fastest")
a1.loglog(ns, fast_med, "x", color="grey", label="median of the repeats")
ref = np.array(ns) * np.log2(ns)
a1.loglog(ns, fast[-1] * ref / ref[-1], "--", color="grey", label=r"$\propto n \log n$")
a1.set_xlabel("n"); a1.set_ylabel("seconds"); a1.legend(loc="best"); a1.set_title("sort + prefix sums")
a2.semilogy(bf_ns, bf, "o-", color="tab:red", label=r"brute force over $\binom{n}{n/2}$")
a2.semilogy(bf_ns, bf_fast, "o-", label="max_variance")
a2.set_xlabel("n"); a2.set_ylabel("seconds"); a2.legend(loc="best"); a2.set_title("brute force explodes")
plt.tight_layout(); plt.show()
per = [1e9 * t / (k * math.log2(k)) for k, t in zip(ns, fast)]
print("n:                 ", [f"2^{int(math.log2(k))}" for k in ns])
print("fastest, ms:       ", [f"{1e3 * t:.3f}" for t in fast])
print("median, ms:        ", [f"{1e3 * t:.3f}" for t in fast_med])
print("t / (n log2 n), ns:", [f"{c:.1f}" for c in per])
t_million = per[-1] * 1e-9 * 1e6 * math.log2(1e6)
print(f"at the largest n = 2^{int(math.log2(ns[-1]))}: {1e3 * fast[-1]:.1f} ms; at that cost per n log2 n, "
      f"n = 10^6 would take {t_million:.2f} s")
print(f"brute force at n = {bf_ns[-1]}: {bf[-1]:.3f} s, {bf[-1] / bf_fast[-1]:.0f}x max_variance's {1e3 * bf_fast[-1]:.3f} ms")
if not SMALL:  # wall-clock claims: checked on the full run only
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
fig, ax = plt.subplots(figsize=(8, 3))
jitter = np.random.default_rng(0).uniform(-0.25, 0.25, len(r))  # separates equal rewards
for row, (name, keep) in enumerate(rules.items()):
    adv = group_advantages(torch.tensor(r[keep]), torch.zeros(m, dtype=torch.long))
    print(f"{name:12s} keeps {r[keep].tolist()}  Var {subset_variance(r, keep):.4f}  advantages {[round(a, 2) for a in adv.tolist()]}")
    ax.scatter(r, row + jitter, color="lightgrey", s=50)
    ax.scatter(r[keep], row + jitter[keep], color="tab:blue", s=50)
    assert subset_variance(r, keep) <= subset_variance(r, rules["max_variance"]) + 1e-12
assert subset_variance(r, rules["max_reward"]) == 0  # four equal top rewards: no signal
n_right = int((r >= 1).sum())
p_miss = math.comb(len(r) - n_right, m) / math.comb(len(r), m)
print(f"a random {m} of these {len(r)} keeps none of the {n_right} correct answers with probability "
      f"C({len(r) - n_right},{m})/C({len(r)},{m}) = {p_miss:.2f}")
ax.set_yticks(range(len(rules)), list(rules)); ax.invert_yaxis(); ax.set_xlabel("reward")
ax.set_title("kept (blue) vs. left out (grey), n = 16, m = 4"); plt.tight_layout(); plt.show()

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
# ## 8. What each rule keeps of the gradient
#
# The paper argues that max-variance keeps the strongest *contrastive* signal. We can measure how much of
# the full-$n$ update direction each rule keeps. On one fixed pool of $n$ real SmolLM2 rollouts per
# prompt (synthetic word problems, binary correctness rewards), `minipods.analysis.gradients` computes the GRPO
# gradient of the LoRA weights for
#
# * the **full pool**: all $n$ rollouts, advantages standardised over the $n$;
# * the **$m$-subset each rule keeps**: advantages standardised within the kept $m$ (what `grpo_update`
#   trains on), for max-variance, max-reward and 200 seeded random draws.
#
# With one update epoch the loss is linear in the advantages, so a subset's gradient is
# $\sum_{i\in S} c_i u_i$, with $u_i$ the gradient of rollout $i$ alone and $c_i = A_i^S / N_S$ (kept
# advantage over kept tokens). One backward pass per rollout gives the $n \times n$ Gram matrix
# $K_{ij} = u_i \cdot u_j$, and every subset's cosine and norm then follow from $K$. The tests check
# this route against the gradient taken directly through `grpo.grpo_loss`. (LoRA's $B$ starts at zero,
# so this is the gradient of a first update: only $B$ receives one.)

# %%
from minipods.analysis import gradients
from minipods.data import build_prompt, synthetic_problems
from minipods.model import load_policy
from minipods.rewards import score_completions
from minipods.fast.rollouts import generate_rollouts  # minipods.fast: the plain engine's distribution, less time

P8, N8, NEW8, RANK8 = (2, 6, 40, 8) if SMALL else (6, 16, 96, 16)
MS8 = [2, 4] if SMALL else [2, 4, 8]
t8 = time.perf_counter()
model, tok = load_policy(lora_r=RANK8, lora_alpha=RANK8)  # SmolLM2-135M-Instruct, fp32 on CPU, LoRA
items = synthetic_problems(P8, seed=3)
torch.manual_seed(0)
pool_ro = generate_rollouts(model, tok, [build_prompt(tok, it["question"]) for it in items], N8,
                            max_new_tokens=NEW8, temperature=0.7, batch_size=16)
scores = score_completions(pool_ro.texts, [it["gold"] for it in items for _ in range(N8)])
pool_r = torch.tensor(scores["reward"])                        # (P*n,) correctness (+ format, never used by 135M)
correct = np.array(scores["correct"]).reshape(P8, N8)        # (P, n) 0/1
for g in range(P8):
    print(f"prompt {g}: rewards {pool_r[g * N8:(g + 1) * N8].tolist()}")
print(f"{P8} x {N8} rollouts in {time.perf_counter() - t8:.0f} s; computing {P8 * N8} per-rollout gradients ...")
pool = gradients.gradient_pool(model, pool_ro, pool_r)
res = gradients.compare_rules(pool, MS8, draws=200, seed=0)
print(f"done in {time.perf_counter() - t8:.0f} s; silent pools (all rewards equal, no gradient at all): "
      f"{int(res['silent_pool'].sum())} of {P8}")
for m8 in MS8:
    print(f"m = {m8}: " + " | ".join(f"{rule} cos {v['cos_mean']:.2f}, norm/full {v['norm_ratio_mean']:.2f}, "
                                     f"silent {v['silent_frac']:.2f}" for rule, v in res["m"][m8].items()))

# %% [markdown]
# Cosine per prompt (left: each dot one prompt with a non-silent pool, random as the mean over its draws
# with the 10–90% range of the draws) and the subset gradient's norm relative to the full pool's (right).

# %%
live = ~res["silent_pool"]
colors = {"max_variance": "tab:blue", "max_reward": "tab:red", "random": "tab:grey"}
fig, (a1, a2) = plt.subplots(1, 2, figsize=(11, 3.8))
for k, rule in enumerate(gradients.RULES):
    x = np.arange(len(MS8)) + 0.08 * (k - 1)  # small offsets so the rules do not overlap
    cos_mean = [res["m"][m8][rule]["cos_mean"] for m8 in MS8]
    a1.plot(x, cos_mean, "o-", color=colors[rule], label=rule)
    for xm, m8 in zip(x, MS8):
        a1.scatter([xm] * int(live.sum()), res["m"][m8][rule]["cos"][live], color=colors[rule], s=12, alpha=0.4)
        if rule == "random" and live.any():
            d = res["m"][m8]["random"]["cos_draws"][live].ravel()
            a1.vlines(xm, np.nanpercentile(d, 10), np.nanpercentile(d, 90), color=colors[rule], lw=3, alpha=0.3)
    a2.plot(x, [res["m"][m8][rule]["norm_ratio_mean"] for m8 in MS8], "o-", color=colors[rule], label=rule)
for a in (a1, a2):
    a.set_xticks(range(len(MS8)), MS8); a.set_xlabel(f"m kept of n = {N8}"); a.grid(alpha=0.3)
a2.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))  # outside: clear of every point
a1.set_ylabel("cosine to the full-pool gradient"); a1.set_title("how much of the full-n direction is kept")
a2.set_ylabel("|subset gradient| / |full-pool gradient|"); a2.set_title("gradient norm")
plt.tight_layout(); plt.show()
if not live.any():
    print("every pool is silent (all rewards equal): no gradient to keep -- rerun with more prompts or rollouts")
for m8 in MS8:
    for v in res["m"][m8].values():
        c = v["cos"][live]
        assert np.all((c >= -1 - 1e-9) & (c <= 1 + 1e-9))
    if live.any():  # max-variance never leaves a non-silent pool silent (m >= 2); max-reward can
        assert res["m"][m8]["max_variance"]["silent_frac"] == 0.0

# The random rule "on average": the mean of each draw's cosine (plotted) is not the cosine of the mean
# gradient over draws (the random rule's expected update direction); both from the same Gram matrices.
avg_rng = np.random.default_rng(1)
for m8 in MS8:
    cos_of_mean, mean_of_cos = [], []
    for g in np.flatnonzero(live):
        full_c = gradients.coefficients(pool.rewards[g], pool.tokens[g], range(N8))
        cs = [gradients.coefficients(pool.rewards[g], pool.tokens[g], sub)
              for sub in gradients.rule_subsets(pool.rewards[g], m8, "random", 200, avg_rng)]
        cos_of_mean.append(gradients.gram_cosine(pool.gram[g], np.mean(cs, axis=0), full_c))
        mean_of_cos.append(np.mean([gradients.gram_cosine(pool.gram[g], c, full_c) for c in cs]))
    if live.any():
        mv, rd = res["m"][m8]["max_variance"]["cos_mean"], res["m"][m8]["random"]["cos_mean"]
        print(f"m = {m8}: random, one draw (mean cosine) {np.mean(mean_of_cos):.2f}, the mean over 200 draws "
              f"{np.mean(cos_of_mean):.3f} | max_variance {mv:.2f}: "
              + ("max-variance keeps more of the direction than a random draw" if mv > rd else
                 "max-variance does NOT beat a random draw here"))
        assert mv > rd  # the card's claim, on every non-silent pool set this run drew
        nr = res["m"][m8]["max_variance"]["norm_ratio_mean"]
        print(f"        max_variance's gradient norm / the full pool's: {nr:.2f}")
        assert nr > 1  # the text below: a balanced kept group's gradient is larger than the full pool's
# %% [markdown]
# How to read it. The three rules keep the same *number* of rollouts but not the same signal. Max-reward
# keeps the top $m$: when fewer than $m$ answers are correct it keeps all of them plus wrong ones (much like
# max-variance), but whenever $m$ or more are correct the kept group is all correct and silent — cosine 0,
# norm 0. A random draw can miss the rare correct answer (the spread of the grey bars), so one draw keeps
# little of the direction. *Averaged over draws*, the random rule's gradient points much closer to the
# full pool's (the last lines of the cell print both), but not exactly along it: each draw re-standardises
# its advantages by its own std (and a silent draw contributes nothing), so the average of the subset
# gradients is not proportional to the full-pool gradient. Training takes one draw per step, not the
# average. Max-variance keeps the rare correct answers together with wrong ones, with no draw-to-draw
# luck involved; the cell checks that it keeps more of the direction than a random draw. Norms: a
# kept group of $m$ balanced rewards gives each rollout an advantage of about $\pm 1$ and divides by the
# tokens of $m$ rollouts, not $n$, so a non-silent subset's gradient is typically *larger* than the full
# pool's; a large norm with a low cosine would be a strong push in a different direction. (With a couple
# of prompts, as in SMALL mode, these are anecdotes; the full run averages over more.)
#
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

fig, ax = plt.subplots(figsize=(7, 3.8))
ax.plot(ns9, curve["observed"], "o-", label="observed: all-equal subgroups of the pool")
ax.plot(ns9, curve["predicted"], "s--", label=r"predicted: mean of $p^n + (1-p)^n$")
for p, ls in ((0.05, ":"), (0.2, "-."), (0.5, (0, (6, 2, 1, 2, 1, 2)))):
    ax.plot(ns9, [p ** k + (1 - p) ** k for k in ns9], ls=ls, color="dimgrey", lw=1, label=f"one prompt with p = {p}")
ax.axvline(m9, color="tab:red", lw=0.8, label=f"GRPO n = m = {m9}")
ax.set_xlabel("n (rollouts per prompt)"); ax.set_ylabel("fraction of silent groups"); ax.set_ylim(-0.02, 1.02)
ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0)); ax.grid(alpha=0.3)
ax.set_title(f"silent groups, {P8} prompts x {N8} rollouts")
plt.tight_layout(); plt.show()

# %% [markdown]
# Observed and predicted part at large $n$ because subgroups are drawn *without* replacement from a
# finite pool: at $n = N$ only an all-equal pool is silent, so there the observed fraction cannot exceed
# the prediction (asserted); and the pass rates are themselves estimated from the same $N$ samples. The
# lesson holds either way: for a hard prompt ($p = 0.05$) the cell prints how much more often a group of
# $m$ is silent than a group of $N$. Max-variance keeps a
# correct and a wrong answer whenever the $n$ generated contain both, so PODS ($n \to m$) is silent only
# as often as a group of $n$ — it trains on $m$ but *listens* to $n$.

# %% [markdown]
# **Takeaways.** Exchanging a kept reward for a more extreme one *on the same side of the kept mean*
# always raises the variance, so the optimum is "$k$ lowest + $m-k$ highest". That turns a
# $\binom nm$ search into a sort, two prefix sums and an $(m+1)$-way scan — negligible next to
# generating or training on rollouts. For binary rewards it simply balances correct and incorrect answers.
#
# **On a card.**
#
# * Max-variance optimum = k lowest + m−k highest rewards: sort + prefix sums, O(n log n); well under a second for 10⁶ rollouts (section 6 prints the extrapolation).
# * Binary rewards: it keeps a balanced mix of right and wrong answers.
# * All-equal kept rewards = a silent group: zero gradient. Max-reward goes silent once m answers are right; max-variance never, if the n differ.
# * One random draw keeps less of the full-n direction than max-variance (section 8 asserts it); only its average over many draws comes close. Max-variance involves no luck.
# * PODS trains on m but listens to n: silent only when all n agree.

# %%
print(f"notebook ran in {time.perf_counter() - T0:.0f} s ({'SMALL' if SMALL else 'full'} mode)")
