"""The bench's parts on one model: rollout throughput, update cost against m, selection time.

PODS's asymmetry (paper, Section 3) on one fixed set of n rollouts (config.fixed_rollouts); what each
part compares: measure/bench.py. Memory runs (memory.MemoryMeter) are apart from the timed ones."""

from __future__ import annotations

import math

import numpy as np
import torch

from minipods.measure import speed
from minipods.measure.common import best_seconds, fit_linear, fit_power_law, fmt_mb, fmt_s, fmt_x, grpo_timer, ratio
from minipods.measure.config import BenchConfig, Context, fixed_rollouts
from minipods.measure.memory import MemoryMeter


def part_rollout(ctx: Context, cfg: BenchConfig) -> dict:
    from minipods.fast.rollouts import generate_rollouts
    model, tok, p = ctx.model, ctx.tok, ctx.prompt
    generate_rollouts(model, tok, [p], 2, max_new_tokens=4, batch_size=2)  # warm-up (lazy init, caches)
    ro = fixed_rollouts(ctx, cfg)  # made here: the fixed set the update and logprob parts reuse
    batched = {"tokens": ro.num_tokens, "seconds": ro.seconds, "tokens_per_s": ro.tokens_per_s}
    seq_tokens, seq_s = 0, 0.0
    torch.manual_seed(cfg.seed)
    for _ in range(cfg.n):
        r1 = generate_rollouts(model, tok, [p], 1, max_new_tokens=cfg.max_new_tokens, batch_size=1)
        seq_tokens, seq_s = seq_tokens + r1.num_tokens, seq_s + r1.seconds
    seq = {"tokens": seq_tokens, "seconds": seq_s, "tokens_per_s": seq_tokens / seq_s if seq_s > 0 else float("nan")}
    return {"n": cfg.n, "max_new_tokens": cfg.max_new_tokens, "prompt_tokens": int(ro.prompt_mask[0].sum()),
            "batched": batched, "sequential": seq, "ratio": ratio(batched["tokens_per_s"], seq["tokens_per_s"]),
            "speed": speed.part_rollout_speed(ctx, cfg)}


def rows_rollout(r: dict) -> list[list[str]]:
    b, s = r["batched"], r["sequential"]
    return [["rollout", f"1 batched generate, n={r['n']} x {r['max_new_tokens']} tok",
             f"{b['tokens_per_s']:.1f} tok/s ({b['tokens']} tok in {fmt_s(b['seconds'])})"],
            ["rollout", f"{r['n']} single-sequence generate calls",
             f"{s['tokens_per_s']:.1f} tok/s ({s['tokens']} tok in {fmt_s(s['seconds'])})"],
            ["rollout", "batched / sequential tokens/s", fmt_x(r["ratio"])]] + speed.rows_rollout_speed(r["speed"])


def update_points(ctx: Context, cfg: BenchConfig, repeats: int | None = None, memory: bool = True) -> list[dict]:
    """Median seconds (of `repeats`) and, with `memory`, peak memory of one GRPO update with the training
    defaults on the first m of the fixed set, for each --m-values m <= n; the costmodel part reuses them."""
    from minipods.grpo import group_advantages
    from minipods.train import make_config, make_optimizer
    ro, tcfg = fixed_rollouts(ctx, cfg), make_config()
    timed = grpo_timer(ctx.model, make_optimizer(ctx.model, tcfg, ctx.device), cfg.micro_batch_size,
                       tcfg.logprob_chunk, 1.0, ctx.device)
    rewards = torch.tensor([float(i % 2) for i in range(len(ro))])  # non-zero advantages
    def update(m):
        batch = ro.select(list(range(m)))  # one fixed set: the first m rollouts of the same n
        return timed(batch, group_advantages(rewards[:m], batch.group))[0], int(batch.completion_mask.sum())
    ms = [m for m in cfg.m_values if m <= len(ro)]  # validate() saw to at least 2
    update(ms[0])  # warm-up: optimizer state, lazy kernels
    points = []
    for m in ms:
        times = [update(m) for _ in range(max(1, repeats or cfg.repeats))]
        points.append({"m": m, "seconds": float(np.median([t for t, _ in times])), "tokens": times[0][1]})
        if memory:
            with MemoryMeter(ctx.device) as mm:  # apart from the timed runs
                update(m)
            points[-1]["peak_mb"] = mm.delta_mb
    return points


def part_update(ctx: Context, cfg: BenchConfig) -> dict:
    points = ctx.update_points = update_points(ctx, cfg)
    slope, intercept, r2 = fit_linear([p["m"] for p in points], [p["seconds"] for p in points])
    full = [p for p in points if p["m"] >= cfg.micro_batch_size]  # micro-batch full: memory should be flat
    mslope = fit_linear([p["m"] for p in full], [p["peak_mb"] for p in full])[0] if len(full) >= 2 else float("nan")
    return {"n": len(ctx.rollouts), "micro_batch_size": cfg.micro_batch_size, "points": points,
            "slope_s_per_rollout": slope, "intercept_s": intercept, "r2": r2, "mem_slope_mb_per_rollout": mslope,
            "mem_range_mb_full_micro_batch": [min(p["peak_mb"] for p in full), max(p["peak_mb"] for p in full)]
            if full else None, "time_ratio_max_min": ratio(points[-1]["seconds"], points[0]["seconds"]),
            "m_ratio_max_min": points[-1]["m"] / points[0]["m"], "speed": speed.part_update_speed(ctx, cfg)}


def rows_update(r: dict) -> list[list[str]]:
    rows = [["update", f"m={p['m']} of n={r['n']} ({p['tokens']} compl. tok), micro-batch {r['micro_batch_size']}",
             f"{fmt_s(p['seconds'])}, peak +{fmt_mb(p['peak_mb'])}"] for p in r["points"]]
    rows.append(["update", "fit: time = a + slope * m", f"slope {r['slope_s_per_rollout']:.3f} s per kept rollout "
                 f"(a={r['intercept_s']:.2f} s, R²={r['r2']:.3f})"])
    rows.append(["update", f"time m={r['points'][-1]['m']} / m={r['points'][0]['m']}",
                 f"{fmt_x(r['time_ratio_max_min'])} (m ratio {r['m_ratio_max_min']:.0f}x)"])
    if r["mem_range_mb_full_micro_batch"]:
        lo, hi = r["mem_range_mb_full_micro_batch"]
        rows.append(["update", f"peak memory for m >= micro-batch {r['micro_batch_size']}",
                     f"{fmt_mb(lo)} .. {fmt_mb(hi)} (slope {r['mem_slope_mb_per_rollout']:+.0f} MB per kept rollout)"])
    return rows + speed.rows_update_speed(r["speed"])


def part_select(ctx: Context, cfg: BenchConfig, m_frac: float = 0.25) -> dict:
    from minipods.downsample import max_variance
    rng, secs, ms = np.random.default_rng(cfg.seed), [], []
    for n in cfg.select_sizes:
        r = rng.integers(0, 2, n) + 0.025 * rng.integers(0, 5, n)  # correctness + format bonus, as total_reward
        ms.append(max(1, int(n * m_frac)))
        secs.append(best_seconds(lambda: max_variance(r, ms[-1]), min_time=0.02 if cfg.quick else 0.1,
                                 rounds=2 if cfg.quick else 3))
    big = [(n, s) for n, s in zip(cfg.select_sizes, secs) if n >= 1024]
    return {"sizes": list(cfg.select_sizes), "m": ms, "m_frac": m_frac, "seconds": secs,
            "exponent": fit_power_law(cfg.select_sizes, secs)[0],
            "exponent_large_n": fit_power_law(*zip(*big))[0] if len(big) >= 2 else float("nan")}


def rows_select(r: dict) -> list[list[str]]:
    rows = [["select", f"max_variance n={n:,}, m={m:,}", fmt_s(s)] for n, m, s in zip(r["sizes"], r["m"], r["seconds"])]
    rows.append(["select", "growth exponent (log-log slope), all n", f"{r['exponent']:.2f}"])
    if math.isfinite(r["exponent_large_n"]):
        rows.append(["select", "growth exponent, n >= 1024", f"{r['exponent_large_n']:.2f}"])
    return rows
