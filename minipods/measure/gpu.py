"""The paper recipe on one GPU: the bench's `cuda` part (`python -m minipods.bench --parts cuda`).

Paper (single GPU): Qwen2.5-3B-Instruct in NF4, LoRA r=64, gradient checkpointing, 8-bit AdamW, 512 + 512
tokens, m=16 of n=64, on the architecture twin (real shapes, random weights, offline) fed random ids: an
update's cost does not depend on the weights, and a twin's rollouts never stop early (the worst case).
"""

from __future__ import annotations

import math
import time

import numpy as np
import torch

from minipods.measure.common import fmt_mb, fmt_s, grpo_timer
from minipods.measure.memory import MIB, MemoryMeter, run_worker

CARD_GIB = 24.0  # "fits a 24 GB card"
CARD_HEADROOM_GIB = 1.0  # CUDA context + fragmentation left free on the card
PAPER_STEP_SEQUENCES = 128  # the paper's step: 8 prompts x m=16 kept rollouts


def load_recipe(name: str, quantize: str | None, lora_r: int, lora_alpha: int, ckpt: bool, optimizer: str,
                device: str, dtype: str = "auto", seed: int = 0):
    """(policy, tokenizer, optimizer) as training loads them (optimizer: auto | adamw | adamw8bit)."""
    from minipods.model import load_policy
    from minipods.train import make_config, make_optimizer

    torch.manual_seed(seed)
    model, tok = load_policy(name, quantize=quantize, lora_r=lora_r, lora_alpha=lora_alpha, dtype=dtype,
                             device=device, gradient_checkpointing=ckpt)
    return model, tok, make_optimizer(model, make_config(optimizer=optimizer), device)


def recipe_batch(model, prompts: int, m: int, tokens: int, prompt_tokens: int | None = None, padded: bool = True,
                 seed: int = 0):
    """(Rollouts, advantages): m rows per prompt of `tokens` random ids, `prompt_tokens` (default: half) of
    them prompt, padded as rollouts are (one prompt left-padded, one completion cut) unless padded=False."""
    from minipods.rollouts import Rollouts

    rows, vocab, g = prompts * m, model.get_output_embeddings().weight.shape[0], torch.Generator().manual_seed(seed)
    P = tokens // 2 if prompt_tokens is None else prompt_tokens
    C = tokens - P
    pm, cm = torch.ones(rows, P, dtype=torch.long), torch.ones(rows, C, dtype=torch.long)
    if padded:
        pm[0, :P // 4] = 0
        cm[-1, C - C // 4:] = 0
    ids = torch.randint(3, vocab, (rows, P), generator=g), pm, torch.randint(3, vocab, (rows, C), generator=g), cm
    batch = Rollouts(*ids, torch.arange(prompts).repeat_interleave(m), [""] * rows, m)
    return batch, torch.randn(rows, generator=torch.Generator().manual_seed(seed))


def twin_prompts(count: int, tokens: int, seed: int) -> list[str]:
    """`count` prompts of exactly `tokens` tokens for a twin's byte-level tokenizer (one token per byte)."""
    g = torch.Generator().manual_seed(seed)
    return ["".join(chr(97 + int(c)) for c in torch.randint(0, 26, (tokens,), generator=g)) for _ in range(count)]


def part_cuda(ctx, cfg) -> dict:
    """Run the worker in a fresh process (its peak memory is then the recipe's alone)."""
    if not torch.cuda.is_available():
        return {"skipped": "skipped (no CUDA GPU)"}
    a = dict(model=cfg.cuda_model, m=cfg.cuda_m, prompts=cfg.cuda_prompts, seq_tokens=cfg.cuda_seq_tokens,
             micro_batch_size=cfg.micro_batch_size, lora_r=64, lora_alpha=64, repeats=max(1, cfg.repeats),
             gen_n=cfg.cuda_gen_n, gen_tokens=cfg.cuda_gen_tokens, seed=cfg.seed, device="cuda")
    return {**run_worker("minipods.measure.gpu:worker_cuda_recipe", a), "settings": a}


def worker_cuda_recipe(a: dict) -> dict:
    """In the worker (`a`: see part_cuda): `repeats` metered updates after a warm-up, then gen_n rollouts."""
    from minipods.data import build_prompt, synthetic_problems
    from minipods.fast.rollouts import generate_rollouts
    from minipods.model import count_parameters
    from minipods.train import make_config

    device, paper = a.get("device", "cuda"), make_config(preset="paper")
    t0 = time.perf_counter()
    model, tok, optimizer = load_recipe(a["model"], "4bit", a["lora_r"], a["lora_alpha"], True, paper.optimizer,
                                        device, seed=a["seed"])  # paper: 8-bit AdamW on CUDA (AdamW on a CPU)
    load_s = time.perf_counter() - t0
    weights_mb = torch.cuda.memory_allocated() / MIB if device.startswith("cuda") else float("nan")
    batch, adv = recipe_batch(model, a["prompts"], a["m"], a["seq_tokens"], padded=False, seed=a["seed"])
    update = grpo_timer(model, optimizer, a["micro_batch_size"], paper.logprob_chunk, paper.max_grad_norm, device)
    # adapter snapshot on the CPU, so that it adds nothing to the GPU memory measured below
    before = {n: p.detach().to("cpu", torch.float32, copy=True) for n, p in model.named_parameters() if p.requires_grad}
    update(batch, adv)  # warm-up (kernels, allocator, optimizer state)
    with MemoryMeter(device) as mm:
        runs = [update(batch, adv) for _ in range(a["repeats"])]
    moved = max(float((p.detach().float().cpu() - before[n]).abs().max()) for n, p in model.named_parameters()
                if p.requires_grad)
    mem_gib = (mm.reserved_mb if math.isfinite(mm.reserved_mb) else mm.peak_mb) / 1024
    prompt = build_prompt(tok, synthetic_problems(1, seed=a["seed"])[0]["question"])
    generate_rollouts(model, tok, [prompt], 2, max_new_tokens=8, batch_size=2)  # warm-up
    ro = generate_rollouts(model, tok, [prompt], a["gen_n"], max_new_tokens=a["gen_tokens"], batch_size=a["gen_n"])
    update_s, B, last = float(np.median([s for s, _ in runs])), len(batch), runs[-1][1]
    return {"gpu": torch.cuda.get_device_name() if device.startswith("cuda") else "cpu", "device": device,
            "load_s": load_s, "optimizer": type(optimizer).__name__,
            "trainable_params": count_parameters(model)["trainable"], "update_s": update_s,
            "update_s_per_sequence": update_s / B, "sequences": B, "weights_mb": weights_mb,
            "peak_allocated_mb": mm.peak_mb, "peak_reserved_mb": mm.reserved_mb, "memory_kind": mm.kind,
            "fits_24gb": mem_gib + CARD_HEADROOM_GIB <= CARD_GIB, "loss": last["loss"], "grad_norm": last["grad_norm"],
            "update_skips": sum(o["skipped"] for _, o in runs), "adapter_max_change": moved,
            "prompt_tokens": int(ro.prompt_mask[0].sum()), "gen_tokens": ro.num_tokens, "gen_s": ro.seconds,
            "gen_tokens_per_s": ro.tokens_per_s}


def rows_cuda(r: dict) -> list[list[str]]:
    if "skipped" in r:
        return [["cuda", "paper recipe (Qwen2.5-3B 4-bit, r=64, m=16, 1024 tok)", r["skipped"]]]
    if "error" in r:
        return [["cuda", "paper recipe", "failed: " + r["error"][:200]]]
    s = r["settings"]
    what = (f"{s['model']} 4-bit, LoRA r=64, {r['sequences']} seq x {s['seq_tokens']} tok, grad ckpt, "
            f"micro-batch {s['micro_batch_size']}, {r['optimizer']}")
    return [["cuda", f"update: {what} ({r['gpu']})",
             f"{fmt_s(r['update_s'])}/update ({fmt_s(r['update_s_per_sequence'])}/seq), "
             f"peak {fmt_mb(r['peak_allocated_mb'])} alloc / {fmt_mb(r['peak_reserved_mb'])} reserved"],
            ["cuda", f"paper step: 8 prompts x m=16 = {PAPER_STEP_SEQUENCES} seq (time linear in m; memory set by "
                     "the micro-batch)", f"~{fmt_s(r['update_s_per_sequence'] * PAPER_STEP_SEQUENCES)}/update"],
            ["cuda", f"fits a 24 GB card (reserved + {CARD_HEADROOM_GIB:g} GiB headroom <= {CARD_GIB:g} GiB)",
             "PASS" if r["fits_24gb"] else "FAIL"],
            ["cuda", f"generate n={s['gen_n']} x {s['gen_tokens']} tok, one batched call",
             f"{r['gen_tokens_per_s']:.0f} tok/s"]]
