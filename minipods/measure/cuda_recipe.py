"""The bench's `cuda` part: the paper recipe's update and generation on one GPU.

Paper (single-GPU setting): Qwen2.5-3B-Instruct in 4 bits (NF4 + double quantisation), LoRA r=64
alpha=64 on every linear layer, gradient checkpointing, 8-bit AdamW, 512 prompt + 512 completion
tokens, m=16 kept rollouts per prompt (n=64 generated). This part measures, in a fresh process
(memory.run_worker):

  update   one GRPO update on m sequences of `seq_tokens` tokens (every token real, half prompt, half
           completion), micro-batch 4: seconds per update, peak allocated and reserved memory, and
           whether it fits a 24 GB card (reserved + 1 GiB headroom for the CUDA context);
  generate n rollouts of one prompt in one batched `generate` call: tokens/s.

The default model is the 3B *architecture twin* (`random:Qwen/Qwen2.5-3B-Instruct`, see
minipods.twins.arch.twin_config): the real shapes with random weights, built offline. The update's
memory and time do not depend on the weights (its tokens are random ids either way); a twin's
rollouts never stop early (EOS is ~1 in 150k tokens), so generation runs the full length: the
worst case of the real model. Pass `--cuda-model Qwen/Qwen2.5-3B-Instruct` to use the hub model.

`worker_cuda_recipe` also runs on a CPU (`device="cpu"`, a shrunk twin, AdamW instead of the CUDA-only
8-bit optimiser) so that its code path is tested without a GPU.
"""

from __future__ import annotations

import math
import time

import numpy as np
import torch

from minipods.measure.common import fmt_mb, fmt_s, sync
from minipods.measure.memory import MemoryMeter, run_worker

CUDA_SKIP_MSG = "skipped (no CUDA GPU)"
CARD_GIB = 24.0  # "fits a 24 GB card"
CARD_HEADROOM_GIB = 1.0  # CUDA context + fragmentation left free on the card
PAPER_STEP_SEQUENCES = 128  # the paper's step: 8 prompts x m=16 kept rollouts


def part_cuda(cfg) -> dict:
    """Run the worker in a fresh process (its peak memory is then the recipe's alone)."""
    if not torch.cuda.is_available():
        return {"skipped": CUDA_SKIP_MSG}
    a = dict(model=cfg.cuda_model, m=cfg.cuda_m, prompts=cfg.cuda_prompts, seq_tokens=cfg.cuda_seq_tokens,
             micro_batch_size=cfg.micro_batch_size, lora_r=64, lora_alpha=64, repeats=max(1, cfg.repeats),
             gen_n=cfg.cuda_gen_n, gen_tokens=cfg.cuda_gen_tokens, seed=cfg.seed, device="cuda")
    r = run_worker("minipods.measure.cuda_recipe:worker_cuda_recipe", a)
    r["settings"] = a
    return r


def recipe_batch(model, a: dict):
    """(batch, advantages): m sequences per prompt of seq_tokens tokens (half prompt, half completion),
    every token real, random ids and random advantages (seeded)."""
    from minipods.rollouts import Rollouts

    B, P = a["m"] * a["prompts"], a["seq_tokens"] // 2
    C = a["seq_tokens"] - P
    vocab = model.get_output_embeddings().weight.shape[0]
    g = torch.Generator().manual_seed(a["seed"])
    ids = torch.randint(min(100, vocab - 1), min(vocab, 30000), (B, P + C), generator=g)
    batch = Rollouts(ids[:, :P], torch.ones(B, P, dtype=torch.long), ids[:, P:], torch.ones(B, C, dtype=torch.long),
                     torch.arange(a["prompts"]).repeat_interleave(a["m"]), [""] * B, a["m"])
    return batch, torch.randn(B, generator=g)


def timed_updates(model, optimizer, cfg, batch, adv, a: dict, device: str) -> dict:
    """One warm-up update, then a["repeats"] timed ones inside a MemoryMeter: their median seconds,
    the meter's peaks, the last update's outputs, and how far the adapter moved."""
    from minipods.fast.update import shared_logprobs
    from minipods.grpo import grpo_update

    # adapter snapshot on the CPU, so that it adds nothing to the GPU memory measured below
    before = {n: p.detach().to("cpu", torch.float32, copy=True) for n, p in model.named_parameters() if p.requires_grad}

    def update():
        sync(device)
        t = time.perf_counter()
        out = grpo_update(model, optimizer, batch, adv, micro_batch_size=a["micro_batch_size"],
                          max_grad_norm=cfg.max_grad_norm, chunk_tokens=cfg.logprob_chunk, logprob_fn=shared_logprobs)
        sync(device)
        return time.perf_counter() - t, out

    update()  # warm-up (kernels, allocator, optimizer state)
    times, outs = [], []
    with MemoryMeter(device) as mm:
        for _ in range(a["repeats"]):
            s, out = update()
            times.append(s)
            outs.append(out)
    moved = max(float((p.detach().float().cpu() - before[n]).abs().max()) for n, p in model.named_parameters()
                if p.requires_grad)
    mem_gib = (mm.reserved_mb if math.isfinite(mm.reserved_mb) else mm.peak_mb) / 1024
    return {"update_s": float(np.median(times)), "peak_allocated_mb": mm.peak_mb, "peak_reserved_mb": mm.reserved_mb,
            "memory_kind": mm.kind, "fits_24gb": mem_gib + CARD_HEADROOM_GIB <= CARD_GIB,
            "loss": outs[-1]["loss"], "grad_norm": outs[-1]["grad_norm"],
            "update_skips": sum(o["skipped"] for o in outs), "adapter_max_change": moved}


def generation_speed(model, tok, a: dict) -> dict:
    """Generation throughput: gen_n rollouts of one prompt in one batched call (after a warm-up)."""
    from minipods.data import build_prompt, synthetic_problems
    from minipods.fast.rollouts import generate_rollouts

    prompt = build_prompt(tok, synthetic_problems(1, seed=a["seed"])[0]["question"])
    generate_rollouts(model, tok, [prompt], 2, max_new_tokens=8, batch_size=2)  # warm-up
    ro = generate_rollouts(model, tok, [prompt], a["gen_n"], max_new_tokens=a["gen_tokens"], batch_size=a["gen_n"])
    return {"prompt_tokens": int(ro.prompt_mask[0].sum()), "gen_tokens": ro.num_tokens, "gen_s": ro.seconds,
            "gen_tokens_per_s": ro.tokens_per_s}


def worker_cuda_recipe(a: dict) -> dict:
    """The measurement itself (runs in the worker process). `a`: see part_cuda; device defaults to cuda."""
    from minipods.model import count_parameters, load_policy
    from minipods.train import make_config, make_optimizer

    device = a.get("device", "cuda")
    torch.manual_seed(a["seed"])
    t0 = time.perf_counter()
    model, tok = load_policy(a["model"], quantize="4bit", lora_r=a["lora_r"], lora_alpha=a["lora_alpha"],
                             device=device, gradient_checkpointing=True)
    load_s = time.perf_counter() - t0
    cfg = make_config(preset="paper")
    optimizer = make_optimizer(model, cfg, device)  # paper: 8-bit AdamW on CUDA (AdamW on a CPU)
    weights_mb = torch.cuda.memory_allocated() / 2**20 if device.startswith("cuda") else float("nan")
    batch, adv = recipe_batch(model, a)
    upd = timed_updates(model, optimizer, cfg, batch, adv, a, device)
    gen = generation_speed(model, tok, a)
    B = len(batch)
    return {"gpu": torch.cuda.get_device_name() if device.startswith("cuda") else "cpu", "device": device,
            "load_s": load_s, "optimizer": type(optimizer).__name__,
            "trainable_params": count_parameters(model)["trainable"],
            "update_s": upd["update_s"], "update_s_per_sequence": upd["update_s"] / B, "sequences": B,
            "weights_mb": weights_mb, **{k: v for k, v in upd.items() if k != "update_s"}, **gen}


def rows_cuda(r: dict) -> list[list[str]]:
    if "skipped" in r:
        return [["cuda", "paper recipe (Qwen2.5-3B 4-bit, r=64, m=16, 1024 tok)", r["skipped"]]]
    if "error" in r:
        return [["cuda", "paper recipe", "failed: " + r["error"][:200]]]
    s = r["settings"]
    opt = f", {r['optimizer']}" if "optimizer" in r else ""
    what = (f"{s['model']} 4-bit, LoRA r=64, {r['sequences']} seq x {s['seq_tokens']} tok, grad ckpt, "
            f"micro-batch {s['micro_batch_size']}{opt}")
    ok = "PASS" if r["fits_24gb"] else "FAIL"
    return [["cuda", f"update: {what} ({r['gpu']})",
             f"{fmt_s(r['update_s'])}/update ({fmt_s(r['update_s_per_sequence'])}/seq), "
             f"peak {fmt_mb(r['peak_allocated_mb'])} "
             f"alloc / {fmt_mb(r['peak_reserved_mb'])} reserved"],
            ["cuda", f"paper step: 8 prompts x m=16 = {PAPER_STEP_SEQUENCES} seq (time linear in m; memory set by "
                     "the micro-batch)", f"~{fmt_s(r['update_s_per_sequence'] * PAPER_STEP_SEQUENCES)}/update"],
            ["cuda", f"fits a 24 GB card (reserved + {CARD_HEADROOM_GIB:g} GiB headroom <= {CARD_GIB:g} GiB)", ok],
            ["cuda", f"generate n={s['gen_n']} x {s['gen_tokens']} tok, one batched call",
             f"{r['gen_tokens_per_s']:.0f} tok/s"]]
