"""Memory of the update and logprob parts of `python -m minipods.bench`, measured with memory.py's meter.

Each measurement runs a computation inside a MemoryMeter with the CPU allocator in exact mode
(memory.exact_cpu_memory), so the peak RSS increase is the peak of live memory. For a model the
bench loaded by name, all of them run in one fresh worker process (memory_in_worker: no heap history
to skew RSS); for a model passed in (the tiny model in tests), here. Exact mode slows CPU compute,
so nothing here is timed: the update part times its runs separately, with the normal allocator.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import torch

from minipods.measure.common import ratio, set_threads, sync
from minipods.measure.config import BenchConfig, Context, fixed_rollouts, updater
from minipods.measure.memory import MemoryMeter, exact_cpu_memory, exact_memory_for_process, run_worker

ROLLOUT_FIELDS = ("prompt_ids", "prompt_mask", "completion_ids", "completion_mask", "group", "n")


def measure_update_memory(update, ms: list[int], device: str) -> dict[int, float]:
    """Peak memory increase of one update for each m (after a warm-up update: optimizer state)."""
    update(ms[0])
    peaks = {}
    with exact_cpu_memory(device):  # RSS = live memory; slower, so these runs are not timed
        for m in ms:
            with MemoryMeter(device) as mm:
                update(m)
            peaks[m] = mm.delta_mb
    return peaks


def measure_logprob_memory(model, b, chunk_tokens: int, device: str) -> dict:
    """Peak memory of forward+backward through the chunked and the naive log-probs on batch `b`,
    without and with gradient checkpointing of the backbone, and how far apart their values are."""
    from minipods.grpo import naive_token_logprobs, token_logprobs
    from minipods.model import base_model_of
    args = (b.prompt_ids, b.prompt_mask, b.completion_ids, b.completion_mask)
    ntok = max(int(b.completion_mask.sum()), 1)
    base = base_model_of(model)

    def run(fn, **kw):
        model.zero_grad(set_to_none=True)
        with MemoryMeter(device) as mm:  # not timed: exact_cpu_memory slows CPU compute down
            logp = fn(model, *args, **kw)
            (-(logp.sum()) / ntok).backward()
            sync(device)
        model.zero_grad(set_to_none=True)
        return logp.detach().float().cpu(), {"peak_mb": mm.delta_mb}

    model.train()
    with torch.no_grad():  # warm-up
        token_logprobs(model, *[a[:1] for a in args], chunk_tokens=chunk_tokens)
    mask = b.completion_mask.bool()
    runs = {}
    for name, ckpt in (("plain", False), ("grad_ckpt", True)):
        if ckpt:
            base.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
        try:
            with exact_cpu_memory(device):
                lp_c, chunked = run(token_logprobs, chunk_tokens=chunk_tokens)
                lp_n, naive = run(naive_token_logprobs)
        finally:
            if ckpt:
                base.gradient_checkpointing_disable()
        diff = float((lp_c - lp_n)[mask].abs().max()) if mask.any() else 0.0
        runs[name] = {"chunked": chunked, "naive": naive, "ratio": ratio(naive["peak_mb"], chunked["peak_mb"]),
                      "max_abs_diff": diff}
    return runs


def update_memory(ctx: Context, cfg: BenchConfig, update, ms: list[int]) -> tuple[dict[int, float], str, bool | None]:
    """The update part's peak memory increase for each m: (peaks, where measured, exact mode or None)."""
    mem = memory_in_worker(ctx, cfg)
    if mem is None:
        return measure_update_memory(update, ms, ctx.device), "in-process", None
    return {int(k): v for k, v in mem["update"].items()}, "fresh worker", mem["exact_memory"]


def logprob_memory(ctx: Context, cfg: BenchConfig, b) -> tuple[dict, str]:
    """The logprob part's runs on batch `b` (see measure_logprob_memory) and where they were measured."""
    mem = memory_in_worker(ctx, cfg)
    if mem is None:
        return measure_logprob_memory(ctx.model, b, cfg.logprob_chunk, ctx.device), "in-process"
    return mem["logprob"], "fresh worker"


def memory_in_worker(ctx: Context, cfg: BenchConfig) -> dict | None:
    """The memory numbers of the update and logprob parts, from one fresh worker process for both
    (None: measure in-process). A worker only for a model loaded by name, on CPU: a long-lived process's
    heap history skews RSS even in exact mode; CUDA counts exactly anyway."""
    if not ctx.by_name or ctx.device.startswith("cuda"):
        return None
    if ctx.memory is None:
        ro = fixed_rollouts(ctx, cfg)
        with tempfile.TemporaryDirectory(prefix="minipods-bench-") as d:
            path = str(Path(d) / "rollouts.pt")
            torch.save({k: getattr(ro, k) for k in ROLLOUT_FIELDS}, path)
            ctx.memory = run_worker("minipods.measure.bench_memory:worker_memory", dict(
                model=cfg.model, dtype=cfg.dtype, device=ctx.device, threads=cfg.threads, seed=cfg.seed,
                lora_r=cfg.lora_r, lora_alpha=cfg.lora_alpha, rollouts=path,
                parts=[p for p in ("update", "logprob") if p in ctx.parts],
                m_values=[m for m in cfg.m_values if m <= len(ro)], micro_batch_size=cfg.micro_batch_size,
                logprob_batch=cfg.logprob_batch, logprob_chunk=cfg.logprob_chunk))
        if "error" in ctx.memory:
            raise RuntimeError(f"memory worker failed: {ctx.memory['error']}")
    return ctx.memory


def worker_memory(a: dict) -> dict:
    """The worker side of memory_in_worker: load the model by name, measure, return the numbers."""
    from minipods.model import load_policy
    from minipods.rollouts import Rollouts
    exact = exact_memory_for_process()  # before anything is allocated: the whole heap history is exact
    set_threads(a["threads"])
    torch.manual_seed(a["seed"])
    model, _ = load_policy(a["model"], dtype=a["dtype"], device=a["device"], lora_r=a["lora_r"],
                           lora_alpha=a["lora_alpha"])
    d = torch.load(a["rollouts"], weights_only=True)  # tensors and an int
    ro = Rollouts(d["prompt_ids"], d["prompt_mask"], d["completion_ids"], d["completion_mask"], d["group"],
                  [""] * len(d["group"]), d["n"])
    out: dict = {"exact_memory": exact}
    if "update" in a["parts"]:
        update = updater(model, ro, a["device"], a["micro_batch_size"])
        out["update"] = {str(m): v for m, v in measure_update_memory(update, a["m_values"], a["device"]).items()}
    if "logprob" in a["parts"]:
        b = ro.select(list(range(min(a["logprob_batch"], len(ro)))))
        out["logprob"] = measure_logprob_memory(model, b, a["logprob_chunk"], a["device"])
    return out

