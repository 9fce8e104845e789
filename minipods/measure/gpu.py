"""The paper recipe on one GPU: the bench's `cuda` part, and the planner against one capped step.

Paper (single-GPU setting): Qwen2.5-3B-Instruct in 4 bits (NF4 + double quantisation), LoRA r=64 on
every linear layer, gradient checkpointing, 8-bit AdamW, 512 + 512 tokens, m=16 kept of n=64. Both
runs load the recipe as training does (load_recipe) and feed the update random ids (recipe_batch):

  `python -m minipods.bench --parts cuda` (part_cuda, in a fresh process): s/update on m sequences,
      peak allocated and reserved memory, "fits a 24 GB card"; n rollouts of one prompt: tokens/s.
  `python -m minipods.measure.gpu --preset paper --gpu-gb 24` (measure_phases): one step (generation,
      update) and one evaluation call under a --gpu-gb cap, each phase's peaks beside the planner's;
      scripts/gpu_check.sh's `paper` and `consumer` stages.

The model is the *architecture twin* (minipods.twins.arch): real shapes, random weights, offline. An
update's memory and time do not depend on the weights, and a twin's rollouts never stop early (EOS is
~1 in 150k tokens): the real model's worst case.
"""

from __future__ import annotations

import json
import math
import sys
import time
from pathlib import Path

import numpy as np
import torch

from minipods.cli import Parser, add_dataclass_args, fail, overrides
from minipods.measure.common import fmt_mb, fmt_s, format_table, grpo_timer
from minipods.measure.memory import MemoryMeter, run_worker
from minipods.measure.plan import PlanConfig, plan
from minipods.model import cuda_device

CUDA_SKIP_MSG = "skipped (no CUDA GPU)"
CARD_GIB = 24.0  # "fits a 24 GB card"
CARD_HEADROOM_GIB = 1.0  # CUDA context + fragmentation left free on the card
PAPER_STEP_SEQUENCES = 128  # the paper's step: 8 prompts x m=16 kept rollouts
PROG = "python -m minipods.measure.gpu"
MIB, GIB = 2 ** 20, 2 ** 30
TOLERANCE = 0.10  # the planner's peak against the measured one: PASS within 10%


# ---------------------------------------------------------------- one recipe, loaded and fed
def load_recipe(name: str, quantize: str | None, lora_r: int, lora_alpha: int, ckpt: bool, optimizer: str,
                device: str, dtype: str = "auto", seed: int = 0):
    """(policy, tokenizer, optimizer) as training loads them (optimizer: auto | adamw | adamw8bit)."""
    from minipods.model import load_policy
    from minipods.train import make_config, make_optimizer

    torch.manual_seed(seed)
    model, tok = load_policy(name, quantize=quantize, lora_r=lora_r, lora_alpha=lora_alpha, dtype=dtype,
                             device=device, gradient_checkpointing=ckpt)
    return model, tok, make_optimizer(model, make_config(optimizer=optimizer), device)


def update_batch(rows: int, tokens: int, vocab: int, seed: int = 0, prompt_tokens: int | None = None,
                 padded: bool = True):
    """(prompt_ids, prompt_mask, completion_ids, completion_mask) of random ids: `prompt_tokens` (default:
    half) of the row's `tokens` prompt, the rest completion, with padding as rollouts have it (one row's
    prompt left-padded, another's completion cut short) unless padded=False (every token real)."""
    g = torch.Generator().manual_seed(seed)
    P = tokens // 2 if prompt_tokens is None else prompt_tokens
    C = tokens - P
    pm, cm = torch.ones(rows, P, dtype=torch.long), torch.ones(rows, C, dtype=torch.long)
    if padded:
        pm[0, :P // 4] = 0
        cm[-1, C - C // 4:] = 0
    return torch.randint(3, vocab, (rows, P), generator=g), pm, torch.randint(3, vocab, (rows, C), generator=g), cm


def recipe_batch(model, prompts: int, m: int, tokens: int, prompt_tokens: int | None = None, padded: bool = True,
                 seed: int = 0):
    """(Rollouts, advantages): m rows per prompt of `tokens` random ids (update_batch; the planner's
    terms are measured on the same batches), random advantages."""
    from minipods.rollouts import Rollouts

    rows, vocab = prompts * m, model.get_output_embeddings().weight.shape[0]
    ids = update_batch(rows, tokens, vocab, seed, prompt_tokens=prompt_tokens, padded=padded)
    batch = Rollouts(*ids, torch.arange(prompts).repeat_interleave(m), [""] * rows, m)
    return batch, torch.randn(rows, generator=torch.Generator().manual_seed(seed))


# ---------------------------------------------------------------- the bench's cuda part
def part_cuda(ctx, cfg) -> dict:
    """Run the worker in a fresh process (its peak memory is then the recipe's alone)."""
    if not torch.cuda.is_available():
        return {"skipped": CUDA_SKIP_MSG}
    a = dict(model=cfg.cuda_model, m=cfg.cuda_m, prompts=cfg.cuda_prompts, seq_tokens=cfg.cuda_seq_tokens,
             micro_batch_size=cfg.micro_batch_size, lora_r=64, lora_alpha=64, repeats=max(1, cfg.repeats),
             gen_n=cfg.cuda_gen_n, gen_tokens=cfg.cuda_gen_tokens, seed=cfg.seed, device="cuda")
    r = run_worker("minipods.measure.gpu:worker_cuda_recipe", a)
    r["settings"] = a
    return r


def timed_updates(model, update, batch, adv, repeats: int, device: str) -> dict:
    """One warm-up update, then `repeats` timed ones inside a MemoryMeter: their median seconds, the
    meter's peaks, the last update's outputs, and how far the adapter moved."""
    # adapter snapshot on the CPU, so that it adds nothing to the GPU memory measured below
    before = {n: p.detach().to("cpu", torch.float32, copy=True) for n, p in model.named_parameters() if p.requires_grad}
    update(batch, adv)  # warm-up (kernels, allocator, optimizer state)
    with MemoryMeter(device) as mm:
        runs = [update(batch, adv) for _ in range(repeats)]
    moved = max(float((p.detach().float().cpu() - before[n]).abs().max()) for n, p in model.named_parameters()
                if p.requires_grad)
    mem_gib = (mm.reserved_mb if math.isfinite(mm.reserved_mb) else mm.peak_mb) / 1024
    last = runs[-1][1]
    return {"update_s": float(np.median([s for s, _ in runs])), "peak_allocated_mb": mm.peak_mb,
            "peak_reserved_mb": mm.reserved_mb, "memory_kind": mm.kind,
            "fits_24gb": mem_gib + CARD_HEADROOM_GIB <= CARD_GIB, "loss": last["loss"], "grad_norm": last["grad_norm"],
            "update_skips": sum(o["skipped"] for _, o in runs), "adapter_max_change": moved}


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
    upd = timed_updates(model, update, batch, adv, a["repeats"], device)
    gen = generation_speed(model, tok, a)
    B = len(batch)
    return {"gpu": torch.cuda.get_device_name() if device.startswith("cuda") else "cpu", "device": device,
            "load_s": load_s, "optimizer": type(optimizer).__name__,
            "trainable_params": count_parameters(model)["trainable"],
            "update_s_per_sequence": upd["update_s"] / B, "sequences": B, "weights_mb": weights_mb, **upd, **gen}


def rows_cuda(r: dict) -> list[list[str]]:
    if "skipped" in r:
        return [["cuda", "paper recipe (Qwen2.5-3B 4-bit, r=64, m=16, 1024 tok)", r["skipped"]]]
    if "error" in r:
        return [["cuda", "paper recipe", "failed: " + r["error"][:200]]]
    s = r["settings"]
    opt = f", {r['optimizer']}" if "optimizer" in r else ""
    what = (f"{s['model']} 4-bit, LoRA r=64, {r['sequences']} seq x {s['seq_tokens']} tok, grad ckpt, "
            f"micro-batch {s['micro_batch_size']}{opt}")
    return [["cuda", f"update: {what} ({r['gpu']})",
             f"{fmt_s(r['update_s'])}/update ({fmt_s(r['update_s_per_sequence'])}/seq), "
             f"peak {fmt_mb(r['peak_allocated_mb'])} alloc / {fmt_mb(r['peak_reserved_mb'])} reserved"],
            ["cuda", f"paper step: 8 prompts x m=16 = {PAPER_STEP_SEQUENCES} seq (time linear in m; memory set by "
                     "the micro-batch)", f"~{fmt_s(r['update_s_per_sequence'] * PAPER_STEP_SEQUENCES)}/update"],
            ["cuda", f"fits a 24 GB card (reserved + {CARD_HEADROOM_GIB:g} GiB headroom <= {CARD_GIB:g} GiB)",
             "PASS" if r["fits_24gb"] else "FAIL"],
            ["cuda", f"generate n={s['gen_n']} x {s['gen_tokens']} tok, one batched call",
             f"{r['gen_tokens_per_s']:.0f} tok/s"]]


# ---------------------------------------------------------------- the planner against a measurement
def _meter(device: str, fn) -> dict:
    """Peaks of fn (memory.MemoryMeter): CUDA allocated and reserved, and the device's used memory
    after it; CPU: the allocator's peak above the start (reserved and device-used: None)."""
    with MemoryMeter(device) as mm:
        fn()
    if not device.startswith("cuda"):
        return {"allocated": round(mm.peak_mb * MIB), "reserved": None, "device_used": None}
    free, total = torch.cuda.mem_get_info(cuda_device(device))
    return {"allocated": round(mm.peak_mb * MIB), "reserved": round(mm.reserved_mb * MIB), "device_used": total - free}


def twin_prompts(count: int, tokens: int, seed: int) -> list[str]:
    """`count` prompts of exactly `tokens` tokens for a twin's byte-level tokenizer (one token per byte)."""
    g = torch.Generator().manual_seed(seed)
    return ["".join(chr(97 + int(c)) for c in torch.randint(0, 26, (tokens,), generator=g)) for _ in range(count)]


def measure_phases(pc: PlanConfig, device: str) -> dict:
    """One full step of pc's recipe (generation, update) and one evaluation call, on the twin of its
    model, under a cap of pc.gpu_gb GiB (CUDA: set_per_process_memory_fraction): each phase's peaks
    (_meter) beside the planner's (CPU: both above the weights, LoRA and optimizer state). PASS when
    every allocated peak is within TOLERANCE of the planner's (CUDA only; a CPU is not judged)."""
    from minipods.fast.rollouts import generate_rollouts

    cuda = device.startswith("cuda")
    if cuda:
        total = torch.cuda.get_device_properties(cuda_device(device)).total_memory
        torch.cuda.set_per_process_memory_fraction(min(1.0, pc.gpu_gb * GIB / total), cuda_device(device))
    p = plan(pc)
    r = p["recipe"]
    model, tok, opt = load_recipe("random:" + r.model.removeprefix("random:"), r.quantize, r.lora_r, r.lora_r,
                                  r.ckpt, r.optimizer, device)
    batch, adv = recipe_batch(model, r.prompts, r.m, r.prompt_tokens + r.new_tokens, prompt_tokens=r.prompt_tokens)
    update = grpo_timer(model, opt, r.micro_batch, r.chunk, 0.1, device)
    prompts, shape = twin_prompts(max(r.prompts, r.eval_batch), r.prompt_tokens, 0), []

    def generate():
        ro = generate_rollouts(model, tok, prompts[:r.prompts], r.n, max_new_tokens=r.new_tokens,
                               batch_size=r.gen_batch, max_prompt_tokens=r.prompt_tokens, fold_adapter=False)
        shape.extend([int(ro.prompt_ids.shape[1]), int(ro.meta["steps"])])

    update(batch, adv)  # warm-up: the optimizer state exists from the first step on
    generate_rollouts(model, tok, prompts[:1], 1, max_new_tokens=2, fold_adapter=False)
    runs = {"generation": generate, "update": lambda: update(batch, adv),
            "evaluation": lambda: generate_rollouts(model, tok, prompts[:r.eval_batch], 1, do_sample=False,
                                                    max_new_tokens=r.eval_tokens, batch_size=r.eval_batch)}
    static = sum(b for _, b, _ in p["generation"]["parts"][:4])  # weights, LoRA, optimizer state
    phases = {}
    for ph, fn in runs.items():
        m = _meter(device, fn)
        pred = p[ph]["peak"] - (0 if cuda else static)
        phases[ph] = {**m, "predicted": pred, "ratio": m["allocated"] / pred}
    ok = all(abs(x["ratio"] - 1) <= TOLERANCE for x in phases.values())
    return {"check": "step", "preset": pc.preset, "model": r.model, "cap_gib": pc.gpu_gb, "prompts": r.prompts,
            "n": r.n, "m": r.m, "eval_batch": r.eval_batch, "generated_shape": shape, "static_predicted": static,
            "phases": phases, "verdict": ("PASS" if ok else "FAIL") if cuda else "not judged on a CPU",
            "device": torch.cuda.get_device_name(cuda_device(device)) if cuda else "cpu"}


def rows_phases(res: dict) -> list[list[str]]:
    """Table rows: per phase, the planner beside the measured peaks (MiB)."""
    mib = lambda b: "-" if b is None else f"{b / MIB:,.1f}"  # noqa: E731
    return [[ph, mib(x["predicted"]), mib(x["allocated"]), f"{x['ratio']:.3f}", mib(x["reserved"]),
             mib(x["device_used"])] for ph, x in res["phases"].items()]


def main(argv=None) -> int:
    parser = Parser(prog=PROG, description="One step and one evaluation call of a recipe: the planner's peak of "
                                           "each phase beside the measured one, under a --gpu-gb cap.")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu", help="cuda[:N] | cpu")
    parser.add_argument("--output", default=None, help="write the result as JSON here")
    add_dataclass_args(parser, PlanConfig)
    try:
        args = parser.parse_args(argv)
    except SystemExit as e:
        return int(e.code or 0)
    try:
        res = measure_phases(PlanConfig(**overrides(args, PlanConfig)), args.device)
    except (ValueError, OSError) as e:
        return fail(PROG, e)
    cpu = "" if args.device.startswith("cuda") else " (CPU: above the weights)"
    print(f"{res['preset']}: {res['model']}, {res['prompts']} prompt(s), n={res['n']} -> m={res['m']}, evaluation "
          f"{res['eval_batch']} questions, cap {res['cap_gib']:g} GiB, {res['device']}: {res['verdict']}")
    print(format_table(rows_phases(res), ("phase", f"planner MiB{cpu}", "allocated MiB", "allocated / planner",
                                          "reserved MiB", "device-used MiB")))
    if args.output:
        Path(args.output).parent.mkdir(parents=True, exist_ok=True)
        Path(args.output).write_text(json.dumps(res, indent=1, default=float))
    return 0 if res["verdict"] != "FAIL" else 1


if __name__ == "__main__":
    sys.exit(main())
