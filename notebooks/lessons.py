"""Helpers of the teaching notebooks: their figures and secondary analyses, so that a student's path
through a notebook is short cells that say what they compute. Each helper is documented and used by one
notebook (sections below); the minipods package holds everything a notebook teaches.

A notebook imports this module from its own folder (`import lessons`: Jupyter starts a notebook's kernel
there; scripts/run_notebooks.py and the notebook tests put notebooks/ on PYTHONPATH).
"""

from __future__ import annotations

# ---------------------------------------------------------------- 01 rollouts

# ---------------------------------------------------------------- 02 rewards

# ---------------------------------------------------------------- 03 max-variance

# The five helpers of notebook 03 (03_max_variance.py): timing the selection (section 6), the kept
# subsets' figure (section 7), what each rule keeps of the gradient (section 8) and the silent-group
# figure (section 9). matplotlib is imported inside the figures' helpers.


def selection_times(select, brute_force, ns, bf_ns, rng, repeat=5, clock=None) -> dict:
    """Section 6: seconds of `select(r, m)` (max_variance) with m = n/4 for each n in `ns`, and of
    `brute_force(r, m)` against `select` with m = n/2 for each n in `bf_ns`, on uniform random rewards.

    `clock`: time.process_time by default, the CPU seconds of this process, which other jobs on a shared
    CPU do not stretch as they do the wall clock (for one thread on an idle core the two agree). Timings
    are still noisy, so each point is the fastest of `repeat` calls (3 above n = 2^16), with the median.
    Returns lists: ns, fast, fast_median, bf_ns, bf, bf_fast, and per_nlogn (the fastest time per
    n log2 n, in nanoseconds)."""
    import math
    import time

    import numpy as np

    clock = clock or time.process_time

    def timings(fn, k):
        ts = []
        for _ in range(k):
            t = clock(); fn(); ts.append(clock() - t)  # noqa: E702
        return min(ts), float(np.median(ts))

    fast, fast_median = [], []
    for n in ns:
        r = rng.random(n)
        t_min, t_med = timings(lambda: select(r, n // 4), 3 if n > 2 ** 16 else repeat)
        fast.append(t_min); fast_median.append(t_med)  # noqa: E702
    bf = [timings(lambda: brute_force(rng.random(k), k // 2), 2)[0] for k in bf_ns]
    bf_fast = [timings(lambda: select(rng.random(k), k // 2), repeat)[0] for k in bf_ns]
    per = [1e9 * t / (n * math.log2(n)) for n, t in zip(ns, fast)]
    return dict(ns=list(ns), fast=fast, fast_median=fast_median, bf_ns=list(bf_ns), bf=bf, bf_fast=bf_fast,
                per_nlogn=per)


def plot_selection_times(t: dict) -> None:
    """Section 6's figure from `selection_times`: max_variance against n log n (left, log-log), and
    brute force against max_variance for small n (right)."""
    import matplotlib.pyplot as plt
    import numpy as np

    fig, (a1, a2) = plt.subplots(1, 2, figsize=(11, 3.8))
    ns = np.array(t["ns"])
    a1.loglog(ns, t["fast"], "o-", label="max_variance (m = n/4), fastest")
    a1.loglog(ns, t["fast_median"], "x", color="grey", label="median of the repeats")
    ref = ns * np.log2(ns)
    a1.loglog(ns, t["fast"][-1] * ref / ref[-1], "--", color="grey", label=r"$\propto n \log n$")
    a1.set_xlabel("n"); a1.set_ylabel("CPU seconds"); a1.legend(loc="best"); a1.set_title("sort + prefix sums")
    a2.semilogy(t["bf_ns"], t["bf"], "o-", color="tab:red", label=r"brute force over $\binom{n}{n/2}$")
    a2.semilogy(t["bf_ns"], t["bf_fast"], "o-", label="max_variance")
    a2.set_xlabel("n"); a2.set_ylabel("CPU seconds"); a2.legend(loc="best"); a2.set_title("brute force explodes")
    plt.tight_layout(); plt.show()


def plot_kept(r, rules: dict) -> None:
    """Section 7's figure: one row per rule, every reward of the group in grey and the kept ones in blue
    (`rules`: name -> kept indices); a fixed vertical jitter separates equal rewards."""
    import matplotlib.pyplot as plt
    import numpy as np

    r = np.asarray(r)
    fig, ax = plt.subplots(figsize=(8, 3))
    jitter = np.random.default_rng(0).uniform(-0.25, 0.25, len(r))
    for row, keep in enumerate(rules.values()):
        ax.scatter(r, row + jitter, color="lightgrey", s=50)
        ax.scatter(r[keep], row + jitter[keep], color="tab:blue", s=50)
    m = len(next(iter(rules.values())))
    ax.set_yticks(range(len(rules)), list(rules)); ax.invert_yaxis(); ax.set_xlabel("reward")
    ax.set_title(f"kept (blue) vs. left out (grey), n = {len(r)}, m = {m}"); plt.tight_layout(); plt.show()


def rollout_pool(model, tok, items, n: int, max_new_tokens: int, temperature: float, seed: int = 0):
    """Section 8's pool: n sampled rollouts of each question in `items` (torch seeded with `seed` first),
    from minipods.fast.rollouts (the plain engine's distribution, in less time), scored against the gold
    answers. Returns (rollouts, rewards: (P*n,) tensor, correctness + format (the 135M model never earns
    the format part), correct: (P, n) 0/1 array)."""
    import numpy as np
    import torch

    from minipods.data import build_prompt
    from minipods.fast.rollouts import generate_rollouts
    from minipods.rewards import score_completions

    torch.manual_seed(seed)
    ro = generate_rollouts(model, tok, [build_prompt(tok, it["question"]) for it in items], n,
                           max_new_tokens=max_new_tokens, temperature=temperature, batch_size=16)
    scores = score_completions(ro.texts, [it["gold"] for it in items for _ in range(n)])
    return ro, torch.tensor(scores["reward"]), np.array(scores["correct"]).reshape(len(items), n)


def kept_signal(pool, res: dict, ms, draws: int = 200, seed: int = 0) -> dict:
    """Section 8's second analysis, on the pool of `minipods.analysis.gradients.gradient_pool`, for the
    result `res` of `gradients.compare_rules(pool, ms, draws=draws, seed=seed)`.

    Redraws exactly compare_rules' subsets (its generator per (seed, m), prompt by prompt) and returns
    {m: {rule: {"kept_var": (P,) population variance of the kept rewards (random: mean over the draws),
    and for random also "avg_cos": (P,) the cosine of the *mean* gradient over the draws (the random
    rule's expected update direction) to the full-n gradient}}}; nan for prompts whose pool is silent.
    The mean of the draws' own cosines must equal compare_rules' (checked: the same draws)."""
    import numpy as np

    from minipods.analysis import gradients
    from minipods.downsample import subset_variance

    P, n = pool.rewards.shape
    live = ~res["silent_pool"]
    out = {}
    for m in ms:
        out[m] = {}
        for rule in gradients.RULES:
            rng = np.random.default_rng([seed, m])  # as compare_rules: the same draws
            kept_var, avg_cos, one_cos = np.full(P, np.nan), np.full(P, np.nan), np.full(P, np.nan)
            for g in range(P):
                subs = gradients.rule_subsets(pool.rewards[g], m, rule, draws, rng)
                if not live[g]:
                    continue
                full = gradients.coefficients(pool.rewards[g], pool.tokens[g], range(n))
                cs = [gradients.coefficients(pool.rewards[g], pool.tokens[g], s) for s in subs]
                kept_var[g] = np.mean([subset_variance(pool.rewards[g], s) for s in subs])
                avg_cos[g] = gradients.gram_cosine(pool.gram[g], np.mean(cs, axis=0), full)
                one_cos[g] = np.mean([gradients.gram_cosine(pool.gram[g], c, full) for c in cs])
            assert np.allclose(one_cos[live], res["m"][m][rule]["cos"][live]), "not compare_rules' draws"
            out[m][rule] = {"kept_var": kept_var} | ({"avg_cos": avg_cos} if rule == "random" else {})
    return out


def print_kept_signal(res: dict, sig: dict, ms) -> None:
    """Section 8's table, per m: for each rule the cosine of its kept subset's gradient to the full-n
    gradient (random: a single draw, averaged over draws), the variance of the kept rewards, the norm
    relative to the full-n gradient and the fraction of silent kept subsets, all averaged over the prompts
    whose pool is not silent; then the random rule's average direction, and the cosines per prompt."""
    import numpy as np

    live = ~res["silent_pool"]
    draws = res["draws"]
    for m in ms:
        print(f"m = {m} of n = {res['n']} (means over the {int(live.sum())} non-silent pools)")
        print(f"  {'rule':18s} {'cos to full-n':>13s} {'kept reward var':>16s} {'|g|/|g full|':>13s} {'silent':>7s}")
        for rule, v in res["m"][m].items():
            name = "random, one draw" if rule == "random" else rule
            print(f"  {name:18s} {v['cos_mean']:13.2f} {np.nanmean(sig[m][rule]['kept_var']):16.3f} "
                  f"{v['norm_ratio_mean']:13.2f} {v['silent_frac']:7.2f}")
        print(f"  {f'random, mean of {draws}':18s} {np.nanmean(sig[m]['random']['avg_cos']):13.3f}"
              "   <- the average gradient over the draws")
        per = lambda x: "[" + ", ".join(f"{c:.2f}" for c in x[live]) + "]"  # noqa: E731
        print(f"  per prompt: max_variance {per(res['m'][m]['max_variance']['cos'])} | "
              f"random one draw {per(res['m'][m]['random']['cos'])} | "
              f"random mean of {draws} {per(sig[m]['random']['avg_cos'])}")


def plot_gradient_cosines(res: dict, ms, n: int) -> None:
    """Section 8's figure from `gradients.compare_rules`: the cosine of each rule's subset gradient to the
    full-n gradient per prompt (left: a dot per non-silent pool, the line their mean; random as the mean
    over its draws, with the 10-90% range of single draws as a bar) and its norm relative to the full-n
    gradient's (right)."""
    import matplotlib.pyplot as plt
    import numpy as np

    from minipods.analysis.gradients import RULES

    live = ~res["silent_pool"]
    colors = {"max_variance": "tab:blue", "max_reward": "tab:red", "random": "tab:grey"}
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(11, 3.8))
    for k, rule in enumerate(RULES):
        x = np.arange(len(ms)) + 0.08 * (k - 1)  # small offsets so the rules do not overlap
        a1.plot(x, [res["m"][m][rule]["cos_mean"] for m in ms], "o-", color=colors[rule], label=rule)
        for xm, m in zip(x, ms):
            a1.scatter([xm] * int(live.sum()), res["m"][m][rule]["cos"][live], color=colors[rule], s=12, alpha=0.4)
            if rule == "random" and live.any():
                d = res["m"][m]["random"]["cos_draws"][live].ravel()
                a1.vlines(xm, np.nanpercentile(d, 10), np.nanpercentile(d, 90), color=colors[rule], lw=3, alpha=0.3)
        a2.plot(x, [res["m"][m][rule]["norm_ratio_mean"] for m in ms], "o-", color=colors[rule], label=rule)
    for a in (a1, a2):
        a.set_xticks(range(len(ms)), ms); a.set_xlabel(f"m kept of n = {n}"); a.grid(alpha=0.3)
    a2.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))  # outside: clear of every point
    a1.set_ylabel("cosine to the full-n gradient"); a1.set_title("how much of the full-n direction is kept")
    a2.set_ylabel("|subset gradient| / |full-n gradient|"); a2.set_title("gradient norm")
    plt.tight_layout(); plt.show()


def plot_silent_curve(curve: dict, m: int, title: str) -> None:
    """Section 9's figure from `gradients.silent_curve`: observed and predicted silent-group fractions
    against n, with p^n + (1-p)^n for three single pass rates and GRPO's n = m marked."""
    import matplotlib.pyplot as plt

    ns = curve["n"]
    fig, ax = plt.subplots(figsize=(7, 3.8))
    ax.plot(ns, curve["observed"], "o-", label="observed: all-equal subgroups of the pool")
    ax.plot(ns, curve["predicted"], "s--", label=r"predicted: mean of $p^n + (1-p)^n$")
    for p, ls in ((0.05, ":"), (0.2, "-."), (0.5, (0, (6, 2, 1, 2, 1, 2)))):
        ax.plot(ns, [p ** k + (1 - p) ** k for k in ns], ls=ls, color="dimgrey", lw=1, label=f"one prompt with p = {p}")
    ax.axvline(m, color="tab:red", lw=0.8, label=f"GRPO n = m = {m}")
    ax.set_xlabel("n (rollouts per prompt)"); ax.set_ylabel("fraction of silent groups"); ax.set_ylim(-0.02, 1.02)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0)); ax.grid(alpha=0.3)
    ax.set_title(title); plt.tight_layout(); plt.show()


# ---------------------------------------------------------------- 04 the GRPO update

# ---------------------------------------------------------------- 05 PODS vs GRPO
