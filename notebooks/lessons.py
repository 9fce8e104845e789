"""Helpers of the teaching notebooks: their figures and secondary analyses, so that a student's path
through a notebook is short cells that say what they compute. Each helper is documented and used by one
notebook (sections below); the minipods package holds everything a notebook teaches.

A notebook imports this module from its own folder (`import lessons`: Jupyter starts a notebook's kernel
there; scripts/run_notebooks.py and the notebook tests put notebooks/ on PYTHONPATH).
"""

from __future__ import annotations

# ---------------------------------------------------------------- 01 rollouts
# Section 5 of 01 times batched generation and explains its shape with the roofline of one decode step:
# the step cannot take less than reading every weight once at the machine's memory bandwidth, nor
# less than its arithmetic (2 FLOPs per weight per row) at the machine's matmul rate.

# the paper's GPU (one L40S), datasheet values: not measured here, only fed to the same roofline formula
L40S_DATASHEET = {"mem_gbs": 864.0, "bf16_tflops": 362.0}


def data_source_label(source: str) -> str:
    """`minipods.data.load_task`'s source (notebooks 01 and 02), said without this machine's absolute path: the environment
    variable's name and the data folder's name ("GSM8K from $MINIPODS_GSM8K_DIR (folder 'gsm8k')"), or
    the hub dataset, or the synthetic task's label unchanged."""
    import os
    from pathlib import Path

    from minipods.data import ENV_DIR

    if not source.startswith("gsm8k:"):
        return source  # "synthetic", "synthetic (GSM8K not found)"
    where = source[len("gsm8k:"):]
    if where.startswith("hub:"):
        return f"GSM8K from the Hugging Face hub ({where[len('hub:'):]})"
    env = os.environ.get(ENV_DIR)
    via = f"${ENV_DIR}" if env and Path(env).resolve() == Path(where).resolve() else "data_dir"
    return f"GSM8K from {via} (folder {Path(where).resolve().name!r})"


def plot_attention_mask(ro) -> None:
    """The rollouts' attention mask, prompt and completion side by side: black = real token."""
    import matplotlib.pyplot as plt
    import torch

    mask = torch.cat([ro.prompt_mask, ro.completion_mask], 1)
    fig, ax = plt.subplots(figsize=(10, 0.25 * len(ro) + 1.2))
    ax.imshow(mask, aspect="auto", cmap="Greys", interpolation="nearest", vmin=0, vmax=1)
    ax.axvline(ro.prompt_ids.shape[1] - 0.5, color="tab:red", lw=2, label="prompt | completion")
    ax.set_xlabel("token column"); ax.set_ylabel("row (prompt-major)")
    ax.set_title("attention mask: black = real token, white = padding (left in the prompt, right after EOS)")
    ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0)); plt.show()


def machine_rates(small: bool = False) -> dict:
    """This machine, measured with this process's torch threads: memory read bandwidth (GB/s = 1e9
    bytes/s; a sum over a buffer far larger than the caches) and float32 matmul rate (TFLOP/s; a
    square F.linear), best of 3 rounds. small: smaller buffers, for the test suite's quick run."""
    import torch
    from minipods.measure.common import best_seconds

    size, mem_mb = (256, 32) if small else (1024, 256)
    a, b = torch.randn(size, size), torch.randn(size, size)
    sec = best_seconds(lambda: torch.nn.functional.linear(a, b), min_time=0.1 if small else 0.3)
    x = torch.ones(mem_mb * 2 ** 20 // 4)
    mem_s = best_seconds(lambda: x.sum(), min_time=0.1 if small else 0.2)
    return {"mem_gbs": x.numel() * 4 / mem_s / 1e9, "fp32_tflops": 2 * size ** 3 / sec / 1e12,
            "threads": torch.get_num_threads()}


def linear_weights(model) -> list:
    """The weight of every nn.Linear one decode step of `model` runs: the base model's projections,
    LoRA's A and B (the plain generate runs them unmerged) and the LM head."""
    import torch
    return [m.weight for m in model.modules() if isinstance(m, torch.nn.Linear)]


def decode_roofline(model, rates: dict, batch_sizes) -> list[dict]:
    """Per batch size B, the roofline of one decode step's matrix products (attention over the cache
    and sampling left out: small at these lengths): memory_s = every linear weight read once at the
    measured bandwidth (the same for every B), compute_s = 2 FLOPs per weight per row at the measured
    float32 rate; the step is memory-bound (time set by bytes moved) while memory_s > compute_s."""
    ws = linear_weights(model)
    n_w, w_bytes = sum(w.numel() for w in ws), sum(w.numel() * w.element_size() for w in ws)
    out = []
    for B in batch_sizes:
        mem_s, flop_s = w_bytes / (rates["mem_gbs"] * 1e9), 2 * n_w * B / (rates["fp32_tflops"] * 1e12)
        out.append({"B": B, "weight_mib": w_bytes / 2 ** 20, "memory_s": mem_s, "compute_s": flop_s,
                    "bound": "memory" if mem_s > flop_s else "compute"})
    return out


def crossover_batch(bytes_per_weight: float, mem_gbs: float, tflops: float) -> float:
    """The batch size at which a decode step's arithmetic (2 FLOPs per weight per row) takes as long as
    reading the weights once: below it the step is memory-bound and extra rows cost almost nothing."""
    return tflops * 1e12 * bytes_per_weight / (2 * mem_gbs * 1e9)


def weight_matmul_seconds(model, batch_sizes, repeats: int = 3) -> dict:
    """{B: seconds} of one decode step's matrix products alone: F.linear on every weight of
    linear_weights(model) with B rows of one token each (random inputs), fastest of `repeats` rounds
    over all B (a slow spell on a shared CPU then hits every B)."""
    import time

    import torch
    ws = linear_weights(model)
    xs = {B: [torch.randn(B, 1, w.shape[1], dtype=w.dtype) for w in ws] for B in batch_sizes}
    best = {B: float("inf") for B in batch_sizes}
    with torch.no_grad():
        for _ in range(repeats):
            for B in batch_sizes:
                t0 = time.perf_counter()
                for w, x in zip(ws, xs[B]):
                    torch.nn.functional.linear(x, w)
                best[B] = min(best[B], time.perf_counter() - t0)
    return best


def batch_timing(runs: dict) -> list[dict]:
    """Section 5's timings summarised per batch size. runs: {B: [(max_new_tokens, seconds, real tokens,
    completion columns), ...]} with, each round, one call for the full length and one for 1 new token
    (the prefill alone: the prompt's forward pass, which samples the first token). Per B: the fastest
    full call (call_s), its median, tokens/s of that call, the fastest prefill, and the decode step's
    seconds, (call_s - prefill_s) / (columns - 1): generate stops when every row has hit EOS or the limit."""
    import numpy as np
    rows = []
    for B, rs in runs.items():
        top = max(r[0] for r in rs)
        full = [r for r in rs if r[0] == top]
        fastest, prefill = min(full), min(r[1] for r in rs if r[0] == 1)
        rows.append({"B": B, "call_s": fastest[1], "median_s": float(np.median([r[1] for r in full])),
                     "tokens_per_s": fastest[2] / fastest[1], "prefill_s": prefill,
                     "step_s": (fastest[1] - prefill) / max(fastest[3] - 1, 1)})
    return rows


def plot_batch_timing(rows: list[dict], new_tokens: int, repeats: int) -> None:
    """Section 5's figure: throughput (fastest of `repeats`) against perfect scaling, and seconds per
    generate call (fastest and median) against the batch size B; rows from batch_timing."""
    import matplotlib.pyplot as plt
    import torch

    Bs, secs, tps, meds = ([r[k] for r in rows] for k in ("B", "call_s", "tokens_per_s", "median_s"))
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(10, 3.5))
    a1.plot(Bs, tps, "o-", label="measured (fastest)")
    a1.plot(Bs, [tps[0] * b for b in Bs], "--", color="grey", label="perfect scaling (B x batch-1)")
    a1.set_xlabel("batch size B"); a1.set_ylabel("tokens / s"); a1.set_xscale("log", base=2); a1.legend(loc="best")
    a1.set_title("throughput")
    a2.plot(Bs, secs, "o-", label="fastest"); a2.plot(Bs, meds, "x", color="grey", label=f"median of {repeats}")
    a2.set_xlabel("batch size B"); a2.set_ylabel("seconds per call"); a2.set_xscale("log", base=2)
    a2.legend(loc="best"); a2.set_title("time per generate call")
    fig.suptitle(f"generation, {new_tokens} new tokens, {torch.get_num_threads()} CPU threads")
    plt.tight_layout(); plt.show()


# ---------------------------------------------------------------- 02 rewards

def plot_group_rewards(rewards: dict, silent: dict, fires: dict):
    """Notebook 02, section 4: one panel per task, each group's n rewards scattered over its question
    (jittered, so equal rewards stay visible). rewards: task -> (P, n) tensor; silent: task -> groups
    with zero reward variance; fires: task -> (rollouts correct, rollouts with a format reward)."""
    import matplotlib.pyplot as plt
    import numpy as np

    fig, axes = plt.subplots(1, len(rewards), figsize=(11, 3.5), sharey=True)
    for ax, (name, r) in zip(np.atleast_1d(axes), rewards.items()):
        P, n = r.shape
        for g in range(P):
            ax.scatter(np.full(n, g) + np.random.default_rng(g).uniform(-0.15, 0.15, n), r[g], alpha=0.7)
        ax.set_title(f"{name}: {silent[name]}/{P} groups with zero reward variance\n"
                     f"{fires[name][0]}/{P * n} correct, {fires[name][1]}/{P * n} with a format reward")
        ax.set_xlabel("question (group)"); ax.set_xticks(range(P)); ax.set_ylim(-0.1, 1.2); ax.grid(alpha=0.3)
    np.atleast_1d(axes)[0].set_ylabel("reward (correct + format)")
    plt.tight_layout(); plt.show()


def plot_silent_probability(ns=(4, 16, 64)):
    """Notebook 02, section 5: P[all n rewards equal] = p^n + (1-p)^n against the per-question success
    probability p, one curve per group size n."""
    import matplotlib.pyplot as plt
    import numpy as np

    ps = np.linspace(0, 1, 201)
    fig, ax = plt.subplots(figsize=(7, 3.5))
    for n in ns:
        ax.plot(ps, ps ** n + (1 - ps) ** n, label=f"n = {n}")
    ax.set_xlabel("per-question success probability p"); ax.set_ylabel("P[all n rewards equal]")
    ax.set_title("zero-variance groups become rare as n grows"); ax.legend(loc="best"); plt.show()


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
# Notebook 04's helpers: the gradient bookkeeping of section 2b, the figures of sections 4 and 5, and
# the byte counts of a 4-bit model (its appendix).


def lora_gradient(lp, params, d_lp):
    """The flat (float64) gradient over `params` of a loss whose derivative with respect to the
    per-token log-probs `lp` is `d_lp` (same shape): backward from `lp` only, its graph kept for the
    next call. Parameters the loss does not reach get zeros."""
    import torch

    g = torch.autograd.grad(lp, params, grad_outputs=d_lp, retain_graph=True, allow_unused=True)
    return torch.cat([(x if x is not None else torch.zeros_like(p)).flatten() for x, p in zip(g, params)]).double()


def cosine(a, b) -> float:
    """Cosine of the angle between two flat vectors (0 when one of them is zero)."""
    return float(a @ b / (a.norm() * b.norm() + 1e-30))


def print_weight_table(lens, rewards, adv_std, adv_dr, weights: dict) -> None:
    """One row per kept rollout: its length, reward, standardised and Dr. GRPO advantage, and the
    per-token weight w_i (x 1e3) of each averaging variant in `weights` (name -> (G,) tensor)."""
    head = f"{'row':>3} {'|o_i|':>5} {'reward':>6} {'A_i':>6} {'A_Dr':>6}"
    print(f"{head} | per-token weight x 1e3: " + " | ".join(weights))
    for i in range(len(lens)):
        print(f"{i:3d} {int(lens[i]):5d} {float(rewards[i]):6.3f} {float(adv_std[i]):6.2f} {float(adv_dr[i]):6.3f} | "
              + " | ".join(f"{1e3 * float(w[i]):+9.3f}" for w in weights.values()))


def print_gradients(grads: dict, losses: dict) -> dict:
    """Print each variant's loss and LoRA gradient norm, then the pairwise cosines of the gradients;
    return the cosines, keyed by (name, name)."""
    for name, g in grads.items():
        print(f"{name:30s} loss {losses[name]:+.5f} | LoRA gradient norm {float(g.norm()):.3e}")
    names, cos = list(grads), {}
    for i in range(len(names)):
        for j in range(i + 1, len(names)):
            cos[names[i], names[j]] = cosine(grads[names[i]], grads[names[j]])
            print(f"cosine({names[i]}, {names[j]}) = {cos[names[i], names[j]]:+.3f}")
    return cos


def plot_update_cost(cost: list[dict], repeats: int, fit: tuple, micro: int) -> None:
    """Section 4's figure: update seconds against m (min and median of `repeats`, the line `fit` =
    (slope, intercept, R^2) through the minima), and the activations held for backward by one forward
    over all m and by the micro-batched grpo_update (rows of `cost`: m, t_min, t_med, act_all, act_upd
    in MiB)."""
    import matplotlib.pyplot as plt

    ms = [c["m"] for c in cost]
    slope, icept, r2 = fit
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(11, 3.4))
    a1.plot(ms, [c["t_min"] for c in cost], "o-", label=f"min of {repeats}")
    a1.plot(ms, [c["t_med"] for c in cost], "x", color="grey", label=f"median of {repeats}")
    a1.plot(ms, [icept + slope * k for k in ms], ":", color="tab:blue", label=f"fit, R² = {r2:.2f}")
    a1.set_xlabel("kept rollouts m"); a1.set_ylabel("update seconds"); a1.legend(loc="best", fontsize=8)
    a1.set_title("update time grows with m")
    a2.plot(ms, [c["act_all"] for c in cost], "o-", color="tab:orange", label="one forward over all m")
    a2.plot(ms, [c["act_upd"] for c in cost], "s--", color="tab:green", label=f"grpo_update, micro-batches of {micro}")
    a2.set_xlabel("kept rollouts m"); a2.set_ylabel("activations held for backward (MiB)")
    a2.legend(loc="best", fontsize=8)
    a2.set_title("activation memory is capped by the micro-batch")
    plt.tight_layout(); plt.show()


def nbytes(tensors) -> int:
    """Bytes of the tensors' elements."""
    return sum(t.numel() * t.element_size() for t in tensors)


def quant_state_bytes(model) -> dict:
    """Bytes of the bitsandbytes 4-bit layers of `model`: the packed weights (two 4-bit weights per
    uint8), their number of weights, and the quantisation scales (each block's absmax; with double
    quantisation those are 8-bit and carry their own float32 scales, state2)."""
    import bitsandbytes as bnb

    out = {"packed": 0, "weights": 0, "absmax": 0, "absmax of absmax": 0}
    for mod in model.modules():
        if isinstance(mod, bnb.nn.Linear4bit):  # the bitsandbytes layers (not peft's LoRA wrappers around them)
            qs = mod.weight.quant_state
            out["packed"] += nbytes([mod.weight])
            out["weights"] += mod.in_features * mod.out_features
            out["absmax"] += nbytes([qs.absmax])
            if getattr(qs, "state2", None) is not None:
                out["absmax of absmax"] += nbytes([qs.state2.absmax])
    return out


def qlora_memory(q_model, f_model, optimizer, activations: float) -> dict:
    """The bytes of one 4-bit LoRA update, part by part: the frozen base (4-bit linear weights with
    their scales; the unquantised rest: embeddings, norms), the same base in fp32 (`f_model`) for
    comparison, the adapter, its gradient, the optimizer's state, and `activations` (one micro-batch's
    saved activations, measured by the caller)."""
    import torch

    q = quant_state_bytes(q_model)
    rest = [p for p in q_model.parameters() if not p.requires_grad and p.dtype != torch.uint8]
    train_p = [p for p in q_model.parameters() if p.requires_grad]
    return {
        "base: 4-bit linear weights + scales": q["packed"] + q["absmax"] + q["absmax of absmax"],
        "base: unquantised (embeddings, norms)": nbytes(rest),
        "base: everything in fp32 instead": nbytes([p for p in f_model.parameters() if not p.requires_grad]),
        "LoRA adapter": nbytes(train_p),
        "gradients": nbytes(train_p),
        "AdamW state": nbytes([t for st in optimizer.state.values() for t in st.values()
                               if torch.is_tensor(t) and t.dim() > 0]),  # the moments (not the 0-d step count)
        "activations (1 micro-batch)": activations,
    }


def plot_memory(mem: dict) -> None:
    """Section 5's figure: `qlora_memory`'s parts as horizontal bars, in MiB."""
    import matplotlib.pyplot as plt

    mib = [v / 2**20 for v in mem.values()]
    fig, ax = plt.subplots(figsize=(8, 3))
    colors = ["tab:blue", "tab:cyan", "lightgrey", "tab:green", "tab:olive", "tab:orange", "tab:red"]
    ax.barh(list(mem), mib, color=colors)
    for i, v in enumerate(mib):
        ax.text(v, i, f" {v:.2f} MiB", va="center", fontsize=8)
    ax.set_xlim(0, 1.25 * max(mib)); ax.set_xlabel("MiB"); ax.invert_yaxis()
    ax.set_title("memory of a 4-bit LoRA update")
    plt.tight_layout(); plt.show()


# ---------------------------------------------------------------- 05 PODS vs GRPO
# Notebook 05 reads two finished arms (GRPO and PODS) from their metrics rows. `rows` is arm ->
# training rows (minipods.analysis.results.training_rows), `cfgs` arm -> config.json.

def seconds_spread(xs) -> str:
    """'median [min-max]' of a list of seconds."""
    import numpy as np

    return f"{np.median(xs):6.2f} [{min(xs):.2f}-{max(xs):.2f}]"


def plot_phase_times(rows: dict, cfgs: dict):
    """Each arm's rollout and update seconds per step; a ring marks a step whose kept rows were all silent
    (advantage 0), where an update that skips silent rows runs one placeholder row."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 3.2))
    for i, (arm, rs) in enumerate(rows.items()):
        steps, color = [r["step"] for r in rs], f"C{i}"
        ax.plot(steps, [r["rollout_s"] for r in rs], "o-", color=color, label=f"{arm}: rollout")
        ax.plot(steps, [r["update_s"] for r in rs], "s--", color=color, label=f"{arm}: update")
        silent = [r for r in rs if r.get("silent_rows") == r.get("kept_rows")]
        ax.plot([r["step"] for r in silent], [r["update_s"] for r in silent], "o", ms=13, mfc="none",
                color=color, label=f"{arm}: update, every kept row silent")
    ax.set_xlabel("step"); ax.set_ylabel("seconds"); ax.set_title("per-step phase times")
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0)); plt.tight_layout(); plt.show()


def rows_paid(r: dict, pricing: str) -> int:
    """Rows a step's update processes under `pricing`: "every_row" every kept row, "skip_silent" the kept
    rows whose advantage is not 0 (minipods.fast.update; 0 when all are silent: one placeholder row runs)."""
    return r["kept_rows"] - r["silent_rows"] if pricing == "skip_silent" else r["kept_rows"]


def update_costs(rs: list[dict], ran: str) -> dict:
    """One arm's update seconds per step as run (`ran`: its config's update pricing) and under both
    pricings, from its own metrics rows: per_row = its update seconds / the rows it processed (a
    placeholder row counted as one), the rule of minipods.analysis.results.repriced_seconds (a step of
    the other pricing: its seconds scaled by the rows that pricing processes; an all-silent step at
    per_row). Means per step: rollout, update, step, kept, silent and processed rows, and
    `update_every` / `update_skip` (update s under each pricing) with `step_every` / `step_skip`."""
    import numpy as np

    done = [rows_paid(r, ran) for r in rs]
    per_row = sum(r["update_s"] for r in rs) / max(sum(max(d, 1) for d in done), 1)
    priced = {}
    for to in ("every_row", "skip_silent"):
        priced[to] = [r["update_s"] if to == ran else
                      (r["update_s"] * max(rows_paid(r, to), 1) / d if d else per_row * max(rows_paid(r, to), 1))
                      for r, d in zip(rs, done)]
    mean = lambda xs: float(np.mean(xs))
    out = {"ran": ran, "steps": len(rs), "per_row": per_row, "kept": mean([r["kept_rows"] for r in rs]),
           "silent": mean([r["silent_rows"] for r in rs]), "processed": mean([max(d, 1) for d in done]),
           "all_silent_steps": sum(r["silent_rows"] == r["kept_rows"] for r in rs),
           "rollout": mean([r["rollout_s"] for r in rs]), "update": mean([r["update_s"] for r in rs]),
           "update_median": float(np.median([r["update_s"] for r in rs])), "step": mean([r["step_s"] for r in rs]),
           "completion_len": mean([r["completion_len_mean"] for r in rs])}
    for to, key in (("every_row", "every"), ("skip_silent", "skip")):
        out[f"update_{key}"] = mean(priced[to])
        out[f"step_{key}"] = out["rollout"] + out[f"update_{key}"]
    return out


def eval_right(r: dict, key: str):
    """(right, questions) of an evaluation row; None when the run predates the key."""
    return None if r.get(key) is None else (round(r[key] * r["eval_n"]), r["eval_n"])


def fmt_eval(c) -> str:
    """'right/questions [95% Wilson interval]'."""
    from minipods.analysis.stats import wilson_interval

    if c is None:
        return "      -       "
    lo, hi = wilson_interval(*c)
    return f"{c[0]:2d}/{c[1]} [{lo:.2f}, {hi:.2f}]"


def print_evaluations(evals: dict) -> None:
    """Each arm's evaluations: lenient and strict accuracy with intervals, format rate."""
    for arm, evs in evals.items():
        for r in evs:
            print(f"{arm:18s} step {r['step']:2d} at {r['elapsed_s']:6.1f} s | lenient {fmt_eval(eval_right(r, 'eval_accuracy'))}"
                  f" | strict {fmt_eval(eval_right(r, 'eval_strict_accuracy'))} | format rate "
                  f"{r.get('eval_format_rate', float('nan')):.2f}")
            s_ = eval_right(r, "eval_strict_accuracy")
            assert s_ is None or s_[0] <= eval_right(r, "eval_accuracy")[0]  # a strict answer is also a lenient one


def paired_finals(run_a, run_b) -> dict:
    """'lenient'/'strict' -> minipods.analysis.stats.paired_difference of two runs' last evaluations on
    their common questions (b minus a); a kind is missing when the runs did not record it."""
    from minipods.analysis import results
    from minipods.analysis.stats import paired_difference

    out = {}
    for key, what in (("correct", "lenient"), ("strict", "strict")):
        a, b = ({q["index"]: int(q[key]) for q in results.final_eval(d) if key in q} for d in (run_a, run_b))
        common = sorted(set(a) & set(b))
        if common:
            out[what] = paired_difference([a[i] for i in common], [b[i] for i in common])
    return out


def paired_verdict(p: dict, what: str) -> str:
    """One sentence on a paired difference (PODS minus GRPO): ahead, behind, or no difference shown."""
    lo, hi = p["ci95"]
    p_val = f", McNemar p = {p['p']:.2f}" if p.get("p") is not None else ""
    ci = f"{100 * p['diff']:+.1f} points, 95% CI [{100 * lo:+.1f}, {100 * hi:+.1f}]{p_val}, {p['n']} questions"
    if lo > 0:
        return f"{what}: PODS ahead of GRPO at the final evaluation ({ci})"
    if hi < 0:
        return f"{what}: GRPO ahead of PODS at the final evaluation ({ci})"
    return f"{what}: no difference shown ({ci}: the interval includes 0)"


def plot_accuracy_intervals(evals: dict) -> None:
    """Lenient and strict accuracy against training seconds, each evaluation with its 95% Wilson interval."""
    import matplotlib.pyplot as plt
    from minipods.analysis.stats import wilson_interval

    fig, axes = plt.subplots(1, 2, figsize=(11, 3.6), sharey=True)
    for ax, (key, what) in zip(axes, (("eval_accuracy", "lenient"), ("eval_strict_accuracy", "strict"))):
        for arm, evs in evals.items():
            pts = [(r["elapsed_s"], eval_right(r, key)) for r in evs if eval_right(r, key)]
            if not pts:
                continue
            xs, ys = [t for t, _ in pts], [100 * k / n for _, (k, n) in pts]
            ci = [wilson_interval(*c) for _, c in pts]
            ax.errorbar(xs, ys, yerr=[[y - 100 * lo for y, (lo, _) in zip(ys, ci)],
                                      [100 * hi - y for y, (_, hi) in zip(ys, ci)]], marker="o", capsize=3, label=arm)
        ax.set_title(f"{what} accuracy (95% Wilson intervals)"); ax.set_xlabel("training seconds"); ax.grid(alpha=0.3)
    axes[0].set_ylabel("test accuracy (%)")
    axes[1].legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0)); plt.tight_layout(); plt.show()


def paper_metric_verdict(time: dict | None, base: str, focus: str, label: str = "as run") -> str:
    """The paper's metric in words, from minipods.analysis.summary.time_to_target of one seed: which arm
    reached `base`'s plateau (the target) sooner in training seconds, or why this run cannot say."""
    if time is None:
        return f"{label}: no baseline arm, so no target"
    (seed, tt), = time["targets"].items()
    if tt is None:
        return (f"{label}: no verdict: `{base}`'s untrained model (its step-0 evaluation) already meets `{base}`'s "
                "own plateau, so this run cannot say which arm is sooner")
    g, p = (time["arms"][a]["per_seed"][seed] for a in (base, focus))
    head = f"{label}: target {100 * tt[0]:.1f}% (±{100 * tt[1]:.1f}); `{base}` reached it at {g['seconds']:.1f} s (step {g['step']}), "
    if p["seconds"] is None:
        return head + (f"`{focus}` never did in its {p['end_s']:.1f} s ({p['end_step']} steps): GRPO won "
                       f"(speed-up at most {g['seconds'] / p['end_s']:.2f}x)")
    sp = g["seconds"] / p["seconds"] if p["seconds"] else float("inf")
    who = "PODS won" if sp > 1 else ("GRPO won" if sp < 1 else "a tie")
    return head + f"`{focus}` at {p['seconds']:.1f} s (step {p['step']}): speed-up {sp:.2f}x, {who}"


def costmodel_timings(cm_runs: list[dict], key: str) -> dict:
    """{sequences: [seconds of each repeat]} of the cost model's rollout or update points."""
    pts = {}
    for res in cm_runs:
        for pt in res[key]:
            pts.setdefault(pt["sequences"], []).append(pt["seconds"])
    return pts


def plot_break_even(roll_t, upd_t, cm, ratios, here_curve, here_curves, paper_curve, paper, paper_gain,
                    n_over_m, arms_point, arms_every, step_ratios, label):
    """Left: the cost model's two phases (each repeat faint, the fastest carrying the fit, the lines).
    Right: the break-even gain against n/m, here (the model, the repeats' range) and on the paper's L40S,
    with the comparison's arms: as run (black diamond, the range of its step-by-step ratios) and priced as
    the model prices them, every kept row paying (hollow diamond)."""
    import matplotlib.pyplot as plt
    import numpy as np

    reps = len(next(iter(roll_t.values())))
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(12, 3.9))
    gx, ux = list(roll_t), list(upd_t)
    for i in range(reps):
        a1.plot(gx, [roll_t[k][i] for k in gx], "o", color="tab:blue", alpha=0.35, ms=4)
        a1.plot(ux, [upd_t[k][i] for k in ux], "s", color="tab:orange", alpha=0.35, ms=4)
    a1.plot(gx, [min(roll_t[k]) for k in gx], "o", color="tab:blue", label=f"rollout (generated): fastest of {reps}")
    a1.plot(ux, [min(upd_t[k]) for k in ux], "s", color="tab:orange", label=f"update (kept, all live): fastest of {reps}")
    xs = np.linspace(0, max(gx + ux), 50)
    a1.plot(xs, [cm.rollout(x) for x in xs], "-", color="tab:blue", alpha=0.6)
    a1.plot(xs, [cm.update(x) for x in xs], "-", color="tab:orange", alpha=0.6)
    a1.set_xlabel("sequences"); a1.set_ylabel("seconds"); a1.legend(fontsize=8); a1.set_title("the two phases, measured here")
    a2.plot(ratios, here_curve, "o-", label=f"here: cost model ({label})")
    a2.fill_between(ratios, np.min(here_curves, axis=0), np.max(here_curves, axis=0), color="tab:blue", alpha=0.15,
                    lw=0, label="here: range over the repeats' usable fits")
    a2.plot(ratios, paper_curve, "s-", color="tab:red", label="paper L40S: line from its two step times")
    a2.plot([paper["n"] / paper["m"]], [paper["break_even_gain"]], "*", ms=14, color="tab:red",
            label=f"paper: {paper['pods_s']} s / {paper['grpo_s']} s")
    a2.errorbar([n_over_m], [arms_point], yerr=[[max(arms_point - min(step_ratios), 0)], [max(max(step_ratios) - arms_point, 0)]],
                fmt="D", color="black", capsize=3, label="the arms as run (mean step ratio; range over steps)")
    a2.plot([n_over_m], [arms_every], "D", mfc="none", color="black", ms=9, label="the arms, every kept row paid (estimate)")
    a2.axhline(paper_gain, color="tab:red", ls=":", label=f"gain implied by the paper's 2x ({paper_gain:.2f})")
    a2.set_xlabel("n / m"); a2.set_ylabel("break-even gain  T_PODS / T_GRPO"); a2.grid(alpha=0.3)
    a2.set_title("PODS pays above its curve"); a2.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    plt.tight_layout(); plt.show()


def silent_groups(rs: list[dict], cfg: dict) -> dict:
    """One arm's silent (zero-std) groups from its metrics rows: k of total groups, fraction, 95% Wilson
    interval, mean pass rate p, the binary prediction p^n + (1-p)^n with each step's fraction of correct
    rollouts as every prompt's pass rate (pred), and the steps where the format bonus fired."""
    import numpy as np
    from minipods.analysis.gradients import predicted_silent_fraction
    from minipods.analysis.stats import wilson_interval

    n, P = cfg["n"], cfg["prompts_per_step"]
    per_step = [round(r["zero_std_frac"] * P) for r in rs]  # silent groups in each step
    assert all(abs(k - r["zero_std_frac"] * P) < 1e-6 for k, r in zip(per_step, rs))
    k, total = sum(per_step), len(rs) * P
    pred = float(np.mean([predicted_silent_fraction([r["correct_frac"]], n) for r in rs]))
    return dict(k=k, total=total, frac=k / total, ci=wilson_interval(k, total), pred=pred, n=n,
                p=float(np.mean([r["correct_frac"] for r in rs])),
                fmt_steps=sum(r.get("format_reward_mean", 0) > 0 for r in rs))


def silent_verdict(sg: dict, sp: dict) -> str:
    """GRPO's (sg) and PODS's (sp) silent fractions compared, whole: the order, whether chance can tell
    them apart (their Wilson intervals), what p^n + (1-p)^n says at GRPO's pass rate, observed minus predicted."""
    from minipods.analysis.gradients import predicted_silent_fraction

    same_p = [predicted_silent_fraction([sg["p"]], k) for k in (sg["n"], sp["n"])]
    assert same_p[1] <= same_p[0] + 1e-12  # at one pass rate, a larger group is silent less often
    overlap = sp["ci"][0] <= sg["ci"][1] and sg["ci"][0] <= sp["ci"][1]
    order = "higher than" if sp["frac"] > sg["frac"] else ("lower than" if sp["frac"] < sg["frac"] else "equal to")
    return (f"PODS's silent fraction ({sp['k']}/{sp['total']}) is {order} GRPO's ({sg['k']}/{sg['total']}); "
            + ("the two intervals overlap, so this run cannot tell them apart" if overlap else "the intervals do not overlap")
            + f". At GRPO's mean pass rate {sg['p']:.3f} a group of {sp['n']} would be silent {same_p[1]:.2f} of the "
            f"time vs {same_p[0]:.2f} for a group of {sg['n']}; observed minus predicted: GRPO {sg['frac'] - sg['pred']:+.2f}, "
            f"PODS {sp['frac'] - sp['pred']:+.2f} (positive: pass rates that differ between prompts raise it; negative: "
            "the format bonus split groups, or chance with this few groups)")


def break_even_curve(cm, ratios, m: int, prompts: int):
    """The cost model's break-even gain T_PODS / T_GRPO at n = r m for each r in ratios; None when one of
    its step times is not positive (a repeat's fit thrown off by a disturbed timing, e.g. a negative
    intercept on the tiny model's millisecond timings)."""
    try:
        return [cm.break_even(int(r * m), m, prompts=prompts)["break_even_gain"] for r in ratios]
    except ValueError:
        return None


def pays_sentence(here: dict, gain: float, timed_max: int, m: int) -> str:
    """What the cost model says of PODS at n/m = 4 with the per-step gain the paper's ~2x implies, every
    assumption named: that gain is the paper's (not measured here), and n_max extrapolates it and the
    rollout line to every larger n."""
    head = (f"if one PODS step here were worth the {gain:.2f} GRPO steps the paper's ~2x implies at its n/m = 4 "
            "(an assumption: this run measured no such gain), PODS at n/m = 4 ")
    if not here["pays"]:
        return head + "would not pay here by the model"
    limit = (f"up to n = {here['n_max']:.0f} at m = {m}" if here["n_max"] != float("inf") else
             "at any n (the fitted rollout slope is not positive: no cost of extra rollouts was measurable)")
    return head + (f"would pay by the model (speed-up {here['speedup']:.2f}x); if that gain also held at every larger "
                   f"n and the rollout line stayed straight past the {timed_max} sequences timed, the extra rollouts "
                   f"would pay {limit}")


def peak_verdict(evals: dict, base: str, focus: str) -> str:
    """The paper's definition read literally on one run: the target is `base`'s peak (its best evaluation,
    no tolerance); each arm's time is its first evaluation at or above it (training seconds); GRPO's time /
    PODS's is the speed-up. evals: arm -> its evaluation rows (eval_accuracy, elapsed_s, step)."""
    peak = max(r["eval_accuracy"] for r in evals[base])
    hit = {a: next((r for r in evals[a] if r["eval_accuracy"] >= peak - 1e-12), None) for a in (base, focus)}
    right = round(peak * evals[base][-1]["eval_n"])
    head = f"`{base}`'s peak {right}/{evals[base][-1]['eval_n']}"
    if hit[base]["step"] == 0:
        return head + " is its untrained model's (step 0): no target, no verdict"
    g, p = hit[base], hit[focus]
    head += f", reached at {g['elapsed_s']:.1f} s (step {g['step']}); "
    if p is None:
        best = max(r["eval_accuracy"] for r in evals[focus])
        return head + (f"`{focus}` never reached it (its best {round(best * evals[focus][-1]['eval_n'])}/"
                       f"{evals[focus][-1]['eval_n']} in its {evals[focus][-1]['elapsed_s']:.1f} s): GRPO won")
    sp = g["elapsed_s"] / p["elapsed_s"] if p["elapsed_s"] else float("inf")
    return head + (f"`{focus}` at {p['elapsed_s']:.1f} s (step {p['step']}): speed-up {sp:.2f}x, "
                   + ("PODS won" if sp > 1 else "GRPO won" if sp < 1 else "a tie"))
