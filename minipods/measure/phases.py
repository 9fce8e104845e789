"""The bench's in-process parts on one model: rollout throughput, update cost against m, log-prob memory.

PODS's asymmetry (paper, Section 3) in three measurements on the same fixed set of n rollouts
(config.fixed_rollouts): how much cheaper one batched generate is than n single calls, how the
update's time and memory grow with the m rollouts it keeps, and what chunked log-probs save over a
full-vocabulary log-softmax. The speed halves of the rollout and update parts are in speed.py.
"""

from __future__ import annotations

import numpy as np
import torch

from minipods.measure.bench_memory import logprob_memory, update_memory
from minipods.measure.common import fit_linear, fmt_mb, fmt_s, fmt_x, ratio
from minipods.measure.config import BenchConfig, Context, fixed_rollouts, updater


# ---------------------------------------------------------------- rollout throughput
def part_rollout(ctx: Context, cfg: BenchConfig) -> dict:
    from minipods.fast.rollouts import generate_rollouts
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


# ---------------------------------------------------------------- update cost vs m
def part_update(ctx: Context, cfg: BenchConfig) -> dict:
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


# ---------------------------------------------------------------- log-prob memory
def part_logprob(ctx: Context, cfg: BenchConfig) -> dict:
    """Chunked vs naive log-probs, forward+backward on one batch, without and with gradient
    checkpointing of the backbone (the paper recipe uses it; it removes most backbone activations,
    so what is left is mostly the head's (tokens x vocab) logits, which chunking bounds)."""
    from minipods.model import base_model_of
    ro = fixed_rollouts(ctx, cfg)
    b = ro.select(list(range(min(cfg.logprob_batch, len(ro)))))
    base = base_model_of(ctx.model)
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
