"""Performance benchmark: `python -m minipods.bench` (table on stdout, numbers in bench.json).

PODS rests on an asymmetry (paper, Section 3): generating rollouts is cheap and parallel, updating
on them is expensive and memory-bound, so generate n and update on m < n. These parts measure it:

  rollout  n completions of one prompt in one batched `generate` vs n single-sequence calls (tokens/s);
           fast vs plain rollouts, this CPU's TFLOP/s and GB/s, a decode step vs its roofline (bench_speed.py)
  update   GRPO update time and peak memory for m = 2, 4, 8, 16 kept rollouts of one fixed set
           (micro-batch fixed): time grows linearly with m, memory is bounded by the micro-batch;
           then grpo_update vs a plain PyTorch GRPO step on the same rows (bench_speed.py)
  logprob  chunked log-probs (grpo.token_logprobs) vs a full-vocabulary log-softmax
           (grpo.naive_token_logprobs): peak memory of forward+backward, and their max abs difference
  select   max_variance down-sampling time for n = 16 ... 1,000,000 and its log-log growth exponent
  trl      one warm GRPO step of minipods beside one of trl.GRPOTrainer, same settings (bench_trl.py)
  cuda     the paper recipe's update on a GPU (Qwen2.5-3B-Instruct 4-bit, LoRA r=64, m=16, 1024-token
           sequences, gradient checkpointing, micro-batch 4, 8-bit AdamW): peak memory, s/update, "fits a
           24 GB card", generation tokens/s (bench_cuda.py); by default on the 3B architecture twin
  costmodel  rollout s vs sequences generated, update s vs kept: s/step of GRPO, PODS, break-even (costmodel.py)

Memory (memory.py): CUDA's peak allocated bytes, or the peak RSS of a phase on CPU. The CPU numbers of
the update and logprob parts come from a fresh worker process with the allocator in exact mode
(bench_memory.py), their times from separate runs with the normal allocator.

`--quick` sizes everything for a shared 2-core CPU (a few minutes) and, unless --threads is given,
uses 1 torch thread: with other jobs on the box, 2 OpenMP threads were ~10x slower than 1 here.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch

from minipods.bench_speed import SPEED_POSITIVE, SPEED_QUICK, SpeedSettings, with_speed
from minipods.cli import Parser, add_dataclass_args, fail, overrides, setting

PARTS = ("rollout", "update", "logprob", "select", "trl", "cuda", "costmodel")
MODEL_PARTS = ("rollout", "update", "logprob", "costmodel")  # parts that use the in-process model
DTYPES = ("auto", "float32", "bfloat16", "float16")


# ---------------------------------------------------------------- settings
@dataclass
class BenchConfig(SpeedSettings):
    """What every part measures (speed_*: bench_speed.py); `--quick` lays QUICK over these defaults, flags over both."""
    model: str = setting("smollm2-135m-instruct", "model for rollout/update/logprob/trl (offline default)")
    dtype: str = setting("auto", "auto (bf16 on CUDA, fp32 on CPU) | float32 | bfloat16 | float16")
    threads: int = setting(0, "torch threads (0: torch's default; --quick: 1)")
    device: str = setting("auto", "auto | cpu | cuda")
    quick: bool = setting(False, "small sizes for a shared CPU (a few minutes), 1 thread")
    seed: int = setting(0, "seed of the prompts, sampling and LoRA init")
    lora_r: int = setting(64, "LoRA rank (rollout/update/logprob/trl)")
    lora_alpha: int = setting(64, "LoRA alpha")
    n: int = setting(16, "rollouts per prompt (the fixed set the update and logprob parts reuse)")
    max_new_tokens: int = setting(128, "rollout length in tokens (quick: 64)")
    m_values: list[int] = setting([2, 4, 8, 16], "kept-rollout counts for the update part (each <= n)")
    micro_batch_size: int = setting(4, "sequences per forward/backward (update, trl, cuda)")
    repeats: int = setting(3, "timed repeats per update point: median time, max memory (quick: 1)")
    logprob_batch: int = setting(16, "sequences in the logprob part (quick: 4)")
    logprob_chunk: int = setting(512, "tokens per chunk in the logprob part; the update part uses the "
                                      "training default, 512 (quick: 64)")
    select_sizes: list[int] = setting([16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1_000_000],
                                      "n values for the select part")
    trl_prompts: int = setting(4, "prompts per step in the trl part (quick: 2)")
    trl_n: int = setting(8, "generations per prompt in the trl part (quick: 4)")
    trl_max_new_tokens: int = setting(128, "completion length in the trl part (quick: 32)")
    cuda_model: str = setting("random:Qwen/Qwen2.5-3B-Instruct", "model of the cuda part: the paper's 3B as its "
                              "architecture twin (real shapes, random weights, offline); or the hub id")
    cuda_m: int = setting(16, "kept rollouts per prompt in the cuda part (the paper's m)")
    cuda_seq_tokens: int = setting(1024, "prompt + completion tokens per sequence in the cuda part (paper: 512 + 512)")
    cuda_prompts: int = setting(1, "prompts per update in the cuda part (1: m=16 sequences; the paper's step: 8)")
    cuda_gen_n: int = setting(64, "rollouts of one prompt in the cuda part's generation (quick: 16)")
    cuda_gen_tokens: int = setting(512, "tokens per rollout in the cuda part's generation (quick: 128)")


# quick: the logprob batch (4 x 64 tokens) spans 4 chunks of 64, as the full run's 16 x 128 spans 4 of 512
# (and the paper's micro-batch, 4 x 512 completion tokens, 4 of 512)
QUICK = dict(max_new_tokens=64, repeats=1, logprob_batch=4, logprob_chunk=64,
             select_sizes=[16, 256, 4096, 65536, 1_000_000], trl_prompts=2, trl_n=4, trl_max_new_tokens=32,
             cuda_gen_n=16, cuda_gen_tokens=128, **SPEED_QUICK)


# ---------------------------------------------------------------- small helpers
def fit_linear(xs, ys) -> tuple[float, float, float]:
    """Least-squares line y = slope * x + intercept; returns (slope, intercept, r2)."""
    x, y = np.asarray(xs, dtype=float), np.asarray(ys, dtype=float)
    if x.size < 2:
        raise ValueError("need at least 2 points to fit a line")
    slope, intercept = np.polyfit(x, y, 1)
    res = y - (slope * x + intercept)
    ss = float(((y - y.mean()) ** 2).sum())
    r2 = 1.0 - float((res ** 2).sum()) / ss if ss > 0 else 1.0
    return float(slope), float(intercept), r2


def fit_power_law(xs, ys) -> tuple[float, float]:
    """Fit y = c * x**k by least squares in log-log space; returns (k, c). k is the growth exponent."""
    x, y = np.asarray(xs, dtype=float), np.asarray(ys, dtype=float)
    if x.size < 2 or (x <= 0).any() or (y <= 0).any():
        raise ValueError("need at least 2 points, all positive")
    k, logc = np.polyfit(np.log(x), np.log(y), 1)
    return float(k), float(math.exp(logc))


def fmt_s(s: float) -> str:
    if s is None or not math.isfinite(s):
        return "n/a"
    return f"{s:.2f} s" if s >= 1 else f"{s * 1e3:.1f} ms" if s >= 1e-3 else f"{s * 1e6:.1f} µs"


def fmt_mb(mb: float) -> str:
    if mb is None or not math.isfinite(mb):
        return "n/a"
    return f"{mb / 1024:.2f} GB" if abs(mb) >= 1024 else f"{mb:.0f} MB"


def fmt_x(r: float) -> str:
    return "n/a" if r is None or not math.isfinite(r) else f"{r:.2f}x"


def ratio(a: float, b: float) -> float:
    return a / b if b and math.isfinite(a) and math.isfinite(b) and b > 0 else float("nan")


def format_table(rows: list[list[str]], headers=("part", "measurement", "result")) -> str:
    """A Markdown table with padded columns (reads well in a terminal and pastes into a README)."""
    rows = [[str(c) for c in r] for r in rows]
    widths = [max(len(str(h)), *(len(r[i]) for r in rows)) if rows else len(str(h)) for i, h in enumerate(headers)]
    line = lambda cells: "| " + " | ".join(c.ljust(w) for c, w in zip(cells, widths)) + " |"  # noqa: E731
    return "\n".join([line([str(h) for h in headers]), "|" + "|".join("-" * (w + 2) for w in widths) + "|"]
                     + [line(r) for r in rows])


def sync(device: str) -> None:
    """Wait for queued CUDA work, so that a timer sees it finished (no-op on CPU)."""
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def set_threads(n: int) -> None:
    """torch threads for this process (0: leave torch's default)."""
    if n:
        torch.set_num_threads(n)


@dataclass
class Context:
    """What the in-process parts share: model, tokenizer, device and one fixed set of rollouts."""
    model: object = None
    tok: object = None
    device: str = "cpu"
    prompt: str = ""
    rollouts: object = None
    parts: tuple = ()  # the parts of this run
    by_name: bool = False  # the model was loaded by name (so a worker process can load it too)
    memory: dict | None = None  # bench_memory.memory_in_worker's numbers, once measured


def fixed_rollouts(ctx: Context, cfg: BenchConfig):
    """The one set of n rollouts the update and logprob parts share (the rollout part's, if it ran)."""
    from minipods.rollouts import generate_rollouts
    if ctx.rollouts is None:
        torch.manual_seed(cfg.seed)
        ctx.rollouts = generate_rollouts(ctx.model, ctx.tok, [ctx.prompt], cfg.n, max_new_tokens=cfg.max_new_tokens,
                                         batch_size=cfg.n)
    return ctx.rollouts


# ---------------------------------------------------------------- part 1: rollout throughput
def part_rollout(ctx: Context, cfg: BenchConfig) -> dict:
    from minipods.rollouts import generate_rollouts
    model, tok, p = ctx.model, ctx.tok, ctx.prompt
    generate_rollouts(model, tok, [p], 2, max_new_tokens=4, batch_size=2)  # warm-up (lazy init, caches)
    torch.manual_seed(cfg.seed)
    ro = generate_rollouts(model, tok, [p], cfg.n, max_new_tokens=cfg.max_new_tokens, batch_size=cfg.n)
    ctx.rollouts = ro  # the fixed set the update and logprob parts reuse
    batched = {"tokens": ro.num_tokens, "seconds": ro.seconds, "tokens_per_s": ro.tokens_per_s}
    seq_tokens, seq_s = 0, 0.0
    torch.manual_seed(cfg.seed)
    for _ in range(cfg.n):
        r1 = generate_rollouts(model, tok, [p], 1, max_new_tokens=cfg.max_new_tokens, batch_size=1)
        seq_tokens, seq_s = seq_tokens + r1.num_tokens, seq_s + r1.seconds
    seq = {"tokens": seq_tokens, "seconds": seq_s, "tokens_per_s": seq_tokens / seq_s if seq_s > 0 else float("nan")}
    return {"n": cfg.n, "max_new_tokens": cfg.max_new_tokens, "prompt_tokens": int(ro.prompt_mask[0].sum()),
            "batched": batched, "sequential": seq, "ratio": ratio(batched["tokens_per_s"], seq["tokens_per_s"])}


def rows_rollout(r: dict) -> list[list[str]]:
    b, s = r["batched"], r["sequential"]
    return [["rollout", f"1 batched generate, n={r['n']} x {r['max_new_tokens']} tok",
             f"{b['tokens_per_s']:.1f} tok/s ({b['tokens']} tok in {fmt_s(b['seconds'])})"],
            ["rollout", f"{r['n']} single-sequence generate calls",
             f"{s['tokens_per_s']:.1f} tok/s ({s['tokens']} tok in {fmt_s(s['seconds'])})"],
            ["rollout", "batched / sequential tokens/s", fmt_x(r["ratio"])]]


# ---------------------------------------------------------------- part 2: update cost vs m
def updater(model, ro, device: str, micro_batch_size: int):
    """update(m) -> (seconds, completion tokens): one GRPO update on the first m rollouts of `ro`,
    with the training defaults (optimizer, log-prob chunk) and 0/1 rewards (non-zero advantages)."""
    from minipods.grpo import group_advantages, grpo_update
    from minipods.train import make_config, make_optimizer
    tcfg = make_config()
    optimizer = make_optimizer(model, tcfg, device)
    rewards = torch.tensor([float(i % 2) for i in range(len(ro))])

    def update(m):
        idx = list(range(m))  # one fixed set: the first m rollouts of the same n
        batch = ro.select(idx)
        adv = group_advantages(rewards[idx], batch.group)
        sync(device)
        t0 = time.perf_counter()
        grpo_update(model, optimizer, batch, adv, micro_batch_size=micro_batch_size, max_grad_norm=1.0,
                    chunk_tokens=tcfg.logprob_chunk)
        sync(device)
        return time.perf_counter() - t0, int(batch.completion_mask.sum())
    return update


def part_update(ctx: Context, cfg: BenchConfig) -> dict:
    from minipods.bench_memory import update_memory  # imported on use: it imports this module
    ro = fixed_rollouts(ctx, cfg)
    ms = [m for m in cfg.m_values if m <= len(ro)]  # validate() saw to at least 2
    update = updater(ctx.model, ro, ctx.device, cfg.micro_batch_size)
    peaks, where, exact = update_memory(ctx, cfg, update, ms)  # exact mode: here or in a fresh worker
    update(ms[0])  # warm-up for the timing: optimizer state, lazy kernels
    points = []
    for m in ms:  # timing: the normal allocator, nothing else running
        times = [update(m) for _ in range(max(1, cfg.repeats))]
        points.append({"m": m, "seconds": float(np.median([t for t, _ in times])), "peak_mb": peaks[m],
                       "tokens": times[0][1]})
    slope, intercept, r2 = fit_linear([p["m"] for p in points], [p["seconds"] for p in points])
    full = [p for p in points if p["m"] >= cfg.micro_batch_size]  # micro-batch full: memory should be flat
    mslope = fit_linear([p["m"] for p in full], [p["peak_mb"] for p in full])[0] if len(full) >= 2 else float("nan")
    return {"n": len(ro), "micro_batch_size": cfg.micro_batch_size, "points": points, "memory_measured": where,
            "exact_memory": exact,
            "slope_s_per_rollout": slope, "intercept_s": intercept, "r2": r2, "mem_slope_mb_per_rollout": mslope,
            "mem_range_mb_full_micro_batch": [min(p["peak_mb"] for p in full), max(p["peak_mb"] for p in full)]
            if full else None,
            "time_ratio_max_min": ratio(points[-1]["seconds"], points[0]["seconds"]),
            "m_ratio_max_min": points[-1]["m"] / points[0]["m"]}


def rows_update(r: dict) -> list[list[str]]:
    rows = [["update", f"m={p['m']} of n={r['n']} ({p['tokens']} compl. tok), micro-batch {r['micro_batch_size']}",
             f"{fmt_s(p['seconds'])}, peak +{fmt_mb(p['peak_mb'])}"] for p in r["points"]]
    rows.append(["update", "fit: time = a + slope * m",
                 f"slope {r['slope_s_per_rollout']:.3f} s per kept rollout "
                 f"(a={r['intercept_s']:.2f} s, R²={r['r2']:.3f})"])
    rows.append(["update", f"time m={r['points'][-1]['m']} / m={r['points'][0]['m']}",
                 f"{fmt_x(r['time_ratio_max_min'])} (m ratio {r['m_ratio_max_min']:.0f}x)"])
    if r["mem_range_mb_full_micro_batch"]:
        lo, hi = r["mem_range_mb_full_micro_batch"]
        rows.append(["update", f"peak memory for m >= micro-batch {r['micro_batch_size']}",
                     f"{fmt_mb(lo)} .. {fmt_mb(hi)} (slope {r['mem_slope_mb_per_rollout']:+.0f} MB per kept rollout)"])
    return rows


# ---------------------------------------------------------------- part 3: log-prob memory
def part_logprob(ctx: Context, cfg: BenchConfig) -> dict:
    """Chunked vs naive log-probs, forward+backward on one batch, without and with gradient
    checkpointing of the backbone (the paper recipe uses it; it removes most backbone activations,
    so what is left is mostly the head's (tokens x vocab) logits, which chunking bounds)."""
    from minipods.bench_memory import logprob_memory
    ro = fixed_rollouts(ctx, cfg)
    b = ro.select(list(range(min(cfg.logprob_batch, len(ro)))))
    base = ctx.model.get_base_model() if hasattr(ctx.model, "get_base_model") else ctx.model
    runs, where = logprob_memory(ctx, cfg, b)  # chunked vs naive, without and with checkpointing
    return {"batch_size": len(b), "seq_len": b.prompt_ids.shape[1] + b.completion_ids.shape[1],
            "completion_tokens": int(b.completion_mask.sum()), "vocab": base.get_output_embeddings().weight.shape[0],
            "chunk_tokens": cfg.logprob_chunk, "runs": runs, "memory_measured": where,
            "ratio": runs["plain"]["ratio"], "ratio_grad_ckpt": runs["grad_ckpt"]["ratio"],
            "max_abs_diff": max(r["max_abs_diff"] for r in runs.values())}


def rows_logprob(r: dict) -> list[list[str]]:
    what = f"B={r['batch_size']}, L={r['seq_len']}, V={r['vocab']}, fwd+bwd"
    rows = []
    for name, label in (("plain", "no ckpt"), ("grad_ckpt", "grad ckpt")):
        x = r["runs"][name]
        c, n = x["chunked"], x["naive"]
        rows += [["logprob", f"{label}: chunked gather/logsumexp ({r['chunk_tokens']} tok/chunk), {what}",
                  f"peak +{fmt_mb(c['peak_mb'])}"],
                 ["logprob", f"{label}: naive full-vocab log_softmax, {what}", f"peak +{fmt_mb(n['peak_mb'])}"],
                 ["logprob", f"{label}: naive / chunked peak memory", fmt_x(x["ratio"])]]
    rows.append(["logprob", "max abs diff, chunked vs naive log-probs", f"{r['max_abs_diff']:.2e}"])
    return rows


# ---------------------------------------------------------------- driver
NOTES = {
    "rollout": "batched/sequential: one generate call decodes all n sequences per forward pass, so the weights are "
               "read once per step for n tokens; why generating many rollouts is cheap (PODS's premise)",
    "update": "update time grows ~linearly with the m kept rollouts (never with the n generated); peak memory is "
              "set by the micro-batch, so it stops growing once m >= micro-batch (memory: a fresh worker process "
              "in exact allocator mode; times: separate runs here, normal allocator)",
    "logprob": "naive materialises (batch x length x vocab) logits and their log-softmax for backward; the chunked "
               "version keeps only (chunk x vocab) at a time and recomputes it in backward. Without checkpointing the "
               "backbone's activations dominate a small model's peak; with it (the paper recipe) the logits do",
    "select": "max_variance sorts once (O(n log n)) and scores m+1 candidates: exponent ~1; at small n fixed "
              "numpy overhead dominates, which pulls the all-n exponent below 1",
}


def _part(name: str):
    """(run(ctx, cfg) -> results, rows(results) -> table rows) of one part."""
    if name == "trl":
        from minipods import bench_trl  # imported on use: bench_trl and bench_cuda import this module
        return (lambda ctx, cfg: bench_trl.part_trl(cfg, ctx.device)), bench_trl.rows_trl
    if name == "cuda":
        from minipods import bench_cuda
        return (lambda ctx, cfg: bench_cuda.part_cuda(cfg)), bench_cuda.rows_cuda
    if name == "costmodel":  # imported on use: costmodel and bench_select import this module
        from minipods import costmodel
        return costmodel.PART  # (part_costmodel, rows_costmodel)
    if name == "select":
        from minipods.bench_select import part_select, rows_select
        return (lambda ctx, cfg: part_select(cfg.select_sizes, cfg.seed, cfg.quick)), rows_select
    pairs = {"rollout": (part_rollout, rows_rollout), "update": (part_update, rows_update)}  # + their fast-vs-plain
    return with_speed(name, *pairs[name]) if name in pairs else (part_logprob, rows_logprob)  # half (bench_speed.py)


POSITIVE = ("n", "max_new_tokens", "micro_batch_size", "repeats", "lora_r", "lora_alpha", "logprob_batch",
            "logprob_chunk", "trl_prompts", "trl_n", "trl_max_new_tokens", "cuda_m", "cuda_seq_tokens",
            "cuda_prompts", "cuda_gen_n", "cuda_gen_tokens") + SPEED_POSITIVE  # settings that must be >= 1


def validate(cfg: BenchConfig, parts: list[str]) -> None:
    """Raise ValueError (one line, naming the flag) for settings no part can run with, before any loading."""
    def need(ok: bool, msg: str):
        if not ok:
            raise ValueError(msg)
    bad = [p for p in parts if p not in PARTS]
    need(parts and not bad, f"unknown part(s) {bad or parts}; expected some of {', '.join(PARTS)}")
    need(cfg.dtype in DTYPES, f"--dtype must be one of {', '.join(DTYPES)}, got {cfg.dtype!r}")
    need(cfg.device in ("auto", "cpu") or cfg.device.startswith("cuda"), f"--device must be auto, cpu or cuda[:N], "
         f"got {cfg.device!r}")
    need(cfg.threads >= 0, f"--threads must be >= 0, got {cfg.threads}")
    for k in POSITIVE:
        need(getattr(cfg, k) >= 1, f"--{k.replace('_', '-')} must be >= 1, got {getattr(cfg, k)}")
    for k in ("m_values", "select_sizes"):
        v = getattr(cfg, k)
        need(bool(v) and min(v) >= 1, f"--{k.replace('_', '-')} must be positive integers, got {v}")
    if "update" in parts or "costmodel" in parts:
        need(len([m for m in cfg.m_values if m <= cfg.n]) >= 2,
             f"the {'update' if 'update' in parts else 'costmodel'} part needs >= 2 --m-values <= --n={cfg.n}, got {cfg.m_values}")
    if "trl" in parts:
        need((cfg.trl_prompts * cfg.trl_n) % cfg.micro_batch_size == 0,
             "--trl-prompts * --trl-n must be a multiple of --micro-batch-size")


def run_bench(cfg: BenchConfig, parts: list[str], model=None, tokenizer=None, log=print) -> dict:
    """Run the selected parts; returns the result dict (also what bench.json holds).
    `model`/`tokenizer` may be passed in (the tiny model in tests)."""
    from minipods.data import build_prompt, synthetic_problems
    from minipods.model import default_device, load_policy
    validate(cfg, parts)
    parts = [p for p in PARTS if p in parts]  # fixed order: rollout feeds update and logprob
    set_threads(cfg.threads)
    device = default_device() if cfg.device == "auto" else cfg.device
    t_start = time.perf_counter()
    ctx = Context(device=device, parts=tuple(parts))
    if any(p in MODEL_PARTS for p in parts):
        if model is None:
            log(f"loading {cfg.model} ({cfg.dtype}) ...")
            model, tokenizer = load_policy(cfg.model, dtype=cfg.dtype, device=device, lora_r=cfg.lora_r,
                                           lora_alpha=cfg.lora_alpha)
            ctx.by_name = True
        ctx.model, ctx.tok = model, tokenizer
        ctx.device = str(next(model.parameters()).device)
        # one GSM8K-style prompt: a seeded synthetic word problem (no data download)
        ctx.prompt = build_prompt(tokenizer, synthetic_problems(1, seed=cfg.seed)[0]["question"])
    results: dict = {}
    for part in parts:
        log(f"[{part}] ...")
        t0 = time.perf_counter()
        results[part] = _part(part)[0](ctx, cfg)
        results[part]["part_s"] = time.perf_counter() - t0
    rows = [row for part in parts for row in _part(part)[1](results[part])]
    notes = [f"{p}: {NOTES[p]}" for p in parts if p in NOTES]
    if "trl" in parts and "notes" in results["trl"]:
        notes += [f"trl: {n}" for n in results["trl"]["notes"]]
    return {"meta": meta(cfg, device, parts, time.perf_counter() - t_start), "parts": results,
            "table": format_table(rows), "rows": rows, "notes": notes}


def meta(cfg: BenchConfig, device: str, parts: list[str], seconds: float) -> dict:
    import importlib.metadata as md

    def ver(d):
        try:
            return md.version(d)
        except md.PackageNotFoundError:
            return None
    return {"config": asdict(cfg), "parts": parts, "device": device, "threads": torch.get_num_threads(),
            "cpu_count": os.cpu_count(), "platform": platform.platform(), "python": platform.python_version(),
            "versions": {d: ver(d) for d in ("torch", "transformers", "peft", "trl", "bitsandbytes")},
            "gpu": torch.cuda.get_device_name() if torch.cuda.is_available() else None,
            "total_s": seconds, "time": time.strftime("%Y-%m-%dT%H:%M:%S")}


# ---------------------------------------------------------------- command line
PROG = "python -m minipods.bench"


def build_parser() -> argparse.ArgumentParser:
    """The bench-only flags, then one flag per BenchConfig field (cli.add_dataclass_args)."""
    p = Parser(prog=PROG, description=__doc__.split("\n\n")[0])
    p.add_argument("--parts", default=",".join(PARTS),
                   help="comma-separated subset of: " + ", ".join(PARTS) + " (default: all)")
    p.add_argument("--quick", action="store_true", help="small sizes for a shared CPU (a few minutes), 1 thread")
    p.add_argument("--output", default="bench.json", help="where to write the JSON results (default: bench.json)")
    add_dataclass_args(p, BenchConfig, skip=("quick",))
    return p


def config_from_args(args: argparse.Namespace) -> BenchConfig:
    """Defaults, then QUICK (with --quick; 1 thread), then the flags given."""
    cfg = BenchConfig(quick=args.quick)
    if args.quick:
        for k, v in {**QUICK, "threads": 1}.items():
            setattr(cfg, k, v)
    for k, v in overrides(args, BenchConfig, skip=("quick",)).items():
        setattr(cfg, k, v)
    return cfg


def main(argv=None) -> int:
    """Returns the exit status: 0, or 2 after one `python -m minipods.bench: error: ...` line."""
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as e:  # Parser.error has printed its one line (or --help its text)
        return int(e.code or 0)
    cfg, parts = config_from_args(args), [p.strip() for p in args.parts.split(",") if p.strip()]
    try:
        validate(cfg, parts)
    except ValueError as e:
        return fail(PROG, e)
    out = run_bench(cfg, parts, log=lambda s: print(s, file=sys.stderr, flush=True))
    m = out["meta"]
    print(f"minipods.bench: model {cfg.model}, dtype {cfg.dtype}, device {m['device']}, threads {m['threads']}, "
          f"{'quick' if cfg.quick else 'full'} run, {m['total_s']:.0f} s")
    print(out["table"])
    print("\nnotes:")
    for n in out["notes"]:
        print(f"- {n}")
    Path(args.output).parent.mkdir(parents=True, exist_ok=True)
    Path(args.output).write_text(json.dumps(out, indent=1, default=float))
    print(f"\nwrote {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
