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


def data_label(source: str) -> str:
    """load_task's source with the machine's absolute path replaced by what the reader has: the
    environment variable's name and the data folder's name ("gsm8k:/x/y/gsm8k" -> "GSM8K from
    $MINIPODS_GSM8K_DIR (folder 'gsm8k')"); the hub and the synthetic fallback are kept as they are."""
    import os
    from pathlib import Path

    from minipods.data import ENV_DIR
    kind, _, where = source.partition(":")
    if kind != "gsm8k" or where.startswith("hub:"):
        return source
    via = f"${ENV_DIR}" if where == os.environ.get(ENV_DIR) else "data_dir"
    return f"GSM8K from {via} (folder {Path(where).name!r})"


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

def data_source_label(source: str) -> str:
    """`minipods.data.load_task`'s source, said without this machine's absolute path: the environment
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

# ---------------------------------------------------------------- 04 the GRPO update

# ---------------------------------------------------------------- 05 PODS vs GRPO
