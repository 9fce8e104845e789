"""The paper recipe's update on a GPU: `python -m minipods.bench --parts cuda`.

Qwen2.5-3B-Instruct in 4 bits, LoRA r=64, m=16 sequences of 1024 tokens, gradient checkpointing,
micro-batch 4 (paper, Section 5): peak memory, seconds per update, whether it "fits a 24 GB card",
and generation tokens/s. Runs in a fresh worker process (memory.run_worker); skipped without CUDA.
"""

from __future__ import annotations

import time

import numpy as np
import torch

from minipods.bench import BenchConfig, fmt_mb, fmt_s
from minipods.memory import MemoryMeter, run_worker

CUDA_SKIP_MSG = "skipped (no CUDA GPU; run on a CUDA machine with the hub reachable)"
CARD_GIB = 24.0  # "fits a 24 GB card"
CARD_HEADROOM_GIB = 1.0  # CUDA context + fragmentation left free on the card


def part_cuda(cfg: BenchConfig) -> dict:
    if not torch.cuda.is_available():
        return {"skipped": CUDA_SKIP_MSG}
    a = dict(model=cfg.cuda_model, m=cfg.cuda_m, prompts=cfg.cuda_prompts, seq_tokens=cfg.cuda_seq_tokens,
             micro_batch_size=cfg.micro_batch_size, lora_r=64, lora_alpha=64, repeats=max(1, cfg.repeats),
             gen_n=cfg.cuda_gen_n, gen_tokens=cfg.cuda_gen_tokens, seed=cfg.seed)
    r = run_worker("minipods.bench_cuda:worker_cuda_recipe", a)
    r["settings"] = a
    return r


def worker_cuda_recipe(a: dict) -> dict:
    from minipods.data import build_prompt, synthetic_problems
    from minipods.grpo import grpo_update
    from minipods.model import load_policy
    from minipods.rollouts import Rollouts, generate_rollouts
    from minipods.train import make_config, make_optimizer

    torch.manual_seed(a["seed"])
    model, tok = load_policy(a["model"], quantize="4bit", lora_r=a["lora_r"], lora_alpha=a["lora_alpha"],
                             device="cuda", gradient_checkpointing=True)
    optimizer = make_optimizer(model, make_config(preset="paper"), "cuda")  # paper: 8-bit AdamW on CUDA
    weights_mb = torch.cuda.memory_allocated() / 2**20
    # m sequences per prompt of seq_tokens tokens (half prompt, half completion), every token real
    B, P = a["m"] * a["prompts"], a["seq_tokens"] // 2
    C = a["seq_tokens"] - P
    vocab = model.get_output_embeddings().weight.shape[0]
    g = torch.Generator().manual_seed(a["seed"])
    ids = torch.randint(100, min(vocab, 30000), (B, P + C), generator=g)
    batch = Rollouts(ids[:, :P], torch.ones(B, P, dtype=torch.long), ids[:, P:], torch.ones(B, C, dtype=torch.long),
                     torch.arange(a["prompts"]).repeat_interleave(a["m"]), [""] * B, a["m"])
    adv = torch.randn(B, generator=g)
    cfg = make_config(preset="paper")

    def update():
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        grpo_update(model, optimizer, batch, adv, micro_batch_size=a["micro_batch_size"],
                    max_grad_norm=cfg.max_grad_norm, chunk_tokens=cfg.logprob_chunk)
        torch.cuda.synchronize()
        return time.perf_counter() - t0

    update()  # warm-up
    times = []
    with MemoryMeter("cuda") as mm:
        for _ in range(a["repeats"]):
            times.append(update())
    # generation throughput: gen_n rollouts of one prompt in one batched call
    prompt = build_prompt(tok, synthetic_problems(1, seed=a["seed"])[0]["question"])
    generate_rollouts(model, tok, [prompt], 2, max_new_tokens=8, batch_size=2)
    ro = generate_rollouts(model, tok, [prompt], a["gen_n"], max_new_tokens=a["gen_tokens"], batch_size=a["gen_n"])
    reserved_gib = mm.reserved_mb / 1024
    return {"gpu": torch.cuda.get_device_name(), "update_s": float(np.median(times)),
            "update_s_per_sequence": float(np.median(times)) / B, "sequences": B, "weights_mb": weights_mb,
            "peak_allocated_mb": mm.peak_mb, "peak_reserved_mb": mm.reserved_mb,
            "fits_24gb": reserved_gib + CARD_HEADROOM_GIB <= CARD_GIB,
            "gen_tokens": ro.num_tokens, "gen_s": ro.seconds, "gen_tokens_per_s": ro.tokens_per_s}


def rows_cuda(r: dict) -> list[list[str]]:
    if "skipped" in r:
        return [["cuda", "paper recipe (Qwen2.5-3B 4-bit, r=64, m=16, 1024 tok)", r["skipped"]]]
    if "error" in r:
        return [["cuda", "paper recipe", "failed: " + r["error"][:200]]]
    s = r["settings"]
    what = (f"{s['model']} 4-bit, LoRA r=64, {r['sequences']} seq x {s['seq_tokens']} tok, grad ckpt, "
            f"micro-batch {s['micro_batch_size']}")
    ok = "PASS" if r["fits_24gb"] else "FAIL"
    return [["cuda", f"update: {what} ({r['gpu']})",
             f"{fmt_s(r['update_s'])}/update ({fmt_s(r['update_s_per_sequence'])}/seq), "
             f"peak {fmt_mb(r['peak_allocated_mb'])} "
             f"alloc / {fmt_mb(r['peak_reserved_mb'])} reserved"],
            ["cuda", "paper step: 8 prompts x m=16 = 128 seq (time linear in m; memory set by the micro-batch)",
             f"~{fmt_s(r['update_s_per_sequence'] * 128)}/update"],
            ["cuda", f"fits a 24 GB card (reserved + {CARD_HEADROOM_GIB:g} GiB headroom <= {CARD_GIB:g} GiB)", ok],
            ["cuda", f"generate n={s['gen_n']} x {s['gen_tokens']} tok, one batched call",
             f"{r['gen_tokens_per_s']:.0f} tok/s"]]

