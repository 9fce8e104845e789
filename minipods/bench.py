"""Performance benchmark: `python -m minipods.bench` (table on stdout, numbers in bench.json).

PODS rests on an asymmetry (paper, Section 3): generating rollouts is cheap and parallel, updating
on them is expensive and memory-bound, so generate n and update on m < n. These parts measure it:

  rollout  n completions of one prompt in one batched `generate` vs n single-sequence calls (tokens/s)
  update   GRPO update time and peak memory for m = 2, 4, 8, 16 kept rollouts of one fixed set
           (micro-batch fixed): time grows linearly with m, memory is bounded by the micro-batch
  logprob  chunked log-probs (grpo.token_logprobs) vs a full-vocabulary log-softmax
           (grpo.naive_token_logprobs): peak memory of forward+backward, and their max abs difference
  select   max_variance down-sampling time for n = 16 ... 1,000,000 and its log-log growth exponent
  trl      one warm GRPO step of minipods vs one of trl.GRPOTrainer, same model/prompts/n/length/LoRA/
           dtype/threads (needs `pip install -r requirements-bench.txt -c requirements.txt`)
  cuda     the paper recipe's update on a GPU (Qwen2.5-3B-Instruct 4-bit, LoRA r=64, m=16, 1024-token
           sequences, gradient checkpointing, micro-batch 4, 8-bit AdamW): peak memory, s/update, "fits a
           24 GB card", and generation tokens/s (minipods/bench_cuda.py). By default on the 3B
           architecture twin (random weights, no hub needed). Skipped (with a message) without CUDA.

Memory: on CUDA, torch's peak allocated bytes over the measurement. On CPU, the process's peak
resident set size (the kernel's high-water mark, reset just before) minus the RSS before. glibc
keeps freed heap memory cached and fragmented, which made such RSS peaks off by up to ~3x from the
memory in use, so the memory measurements of the update and logprob parts run in a fresh worker
process with glibc mapping every block >= 64 KiB on its own (exact_cpu_memory; in-process for a
model passed in, e.g. in tests), and the update times come from separate runs with the normal
allocator. The `trl` part runs each framework in a fresh subprocess and reports the
plain peak RSS of its warm step (what a user would see); `cuda` runs in a subprocess too.

`--quick` sizes everything for a shared 2-core CPU (a few minutes) and, unless --threads is given,
uses 1 torch thread: with other jobs on the box, 2 OpenMP threads were ~10x slower than 1 here.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import gc
import json
import math
import os
import platform
import resource
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import torch

from minipods.bench_cuda import (  # noqa: F401  (re-exported: bench.part_cuda etc.)
    CARD_GIB, CARD_HEADROOM_GIB, CUDA_SKIP_MSG, part_cuda, rows_cuda, worker_cuda_recipe,
)

PARTS = ("rollout", "update", "logprob", "select", "trl", "cuda")
MODEL_PARTS = ("rollout", "update", "logprob")  # parts that use the in-process model
TRL_SKIP_MSG = "skipped (pip install -r requirements-bench.txt)"
RESULT_TAG = "BENCH_RESULT "


# ---------------------------------------------------------------- settings
@dataclass
class BenchConfig:
    model: str = "smollm2-135m-instruct"
    dtype: str = "auto"
    threads: int = 0  # 0: torch default (quick: 1)
    device: str = "auto"
    quick: bool = False
    seed: int = 0
    lora_r: int = 64
    lora_alpha: int = 64
    # rollout
    n: int = 16
    max_new_tokens: int = 128
    # update
    m_values: list[int] = field(default_factory=lambda: [2, 4, 8, 16])
    micro_batch_size: int = 4
    repeats: int = 3  # timed repeats per point (median time, max memory)
    # logprob
    logprob_batch: int = 16
    logprob_chunk: int = 512  # logprob part only (the update part uses the training default, 512)
    # select
    select_sizes: list[int] = field(default_factory=lambda: [16, 64, 256, 1024, 4096, 16384, 65536,
                                                             262144, 1_000_000])
    # trl
    trl_prompts: int = 4
    trl_n: int = 8
    trl_max_new_tokens: int = 128
    # cuda
    cuda_model: str = "random:Qwen/Qwen2.5-3B-Instruct"  # the twin: real shapes, random weights, offline
    cuda_m: int = 16
    cuda_seq_tokens: int = 1024  # prompt + completion tokens per sequence (paper: 512 + 512)
    cuda_prompts: int = 1  # prompts per update (the paper's step has 8: 8 x 16 sequences)
    cuda_gen_n: int = 64
    cuda_gen_tokens: int = 512


# quick: the logprob batch (4 x 64 tokens) spans 4 chunks of 64, as the full run's 16 x 128 spans 4 of 512
# (and the paper's micro-batch, 4 x 512 completion tokens, 4 of 512)
QUICK = dict(max_new_tokens=64, repeats=1, logprob_batch=4, logprob_chunk=64,
             select_sizes=[16, 256, 4096, 65536, 1_000_000], trl_prompts=2, trl_n=4, trl_max_new_tokens=32,
             cuda_gen_n=16, cuda_gen_tokens=128)


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
    if s >= 1:
        return f"{s:.2f} s"
    if s >= 1e-3:
        return f"{s * 1e3:.1f} ms"
    return f"{s * 1e6:.1f} µs"


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


def _sync(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def _malloc_trim() -> None:
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass


M_MMAP_THRESHOLD = -3  # glibc mallopt parameter
EXACT_MMAP_THRESHOLD = 64 << 10  # allocations >= 64 KiB get their own mapping, unmapped on free
DEFAULT_MMAP_THRESHOLD = 32 << 20  # where glibc's dynamic threshold settles once large blocks were freed


@contextlib.contextmanager
def exact_cpu_memory(device: str = "cpu"):
    """Make CPU RSS follow live memory (glibc only); yields whether that took effect.

    glibc serves blocks below its mmap threshold (which grows to 32 MiB) from its heap and keeps
    freed heap memory, cached and fragmented: RSS peaks then overstate (trimmed heap faulted in
    again) or understate (cached heap reused) what a computation needs, by up to ~3x here, depending
    on what ran before in the process. With a 64 KiB threshold every tensor of 64 KiB or more (all
    activations, logits, LoRA weights and grads) is mapped and unmapped on its own, so the peak RSS
    increase is the peak of live memory (checked against glibc's mallinfo2 accounting). Fresh pages
    cost time (CPU compute ~1.5x slower), so only memory measurements use it.
    """
    if _EXACT_PROCESS and not device.startswith("cuda"):  # already on for the whole process
        yield True
        return
    libc = None
    if not device.startswith("cuda"):
        try:
            libc = ctypes.CDLL("libc.so.6")
            if libc.mallopt(M_MMAP_THRESHOLD, EXACT_MMAP_THRESHOLD) != 1:
                libc = None
        except (OSError, AttributeError):
            libc = None
    try:
        yield libc is not None
    finally:
        if libc is not None:
            libc.mallopt(M_MMAP_THRESHOLD, DEFAULT_MMAP_THRESHOLD)


_EXACT_PROCESS = False


def exact_memory_for_process() -> bool:
    """exact_cpu_memory for the rest of this process (a fresh worker: no heap history to skew RSS)."""
    global _EXACT_PROCESS
    try:
        _EXACT_PROCESS = ctypes.CDLL("libc.so.6").mallopt(M_MMAP_THRESHOLD, EXACT_MMAP_THRESHOLD) == 1
    except (OSError, AttributeError):
        _EXACT_PROCESS = False
    return _EXACT_PROCESS


def rss_mb() -> float:
    import psutil
    return psutil.Process().memory_info().rss / 2**20


def _peak_rss_mb() -> float | None:
    """The kernel's high-water mark of this process's RSS (VmHWM), Linux only."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return None


def _reset_peak_rss() -> bool:
    """Reset VmHWM to the current RSS (Linux >= 4.0: write 5 to /proc/self/clear_refs)."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return _peak_rss_mb() is not None
    except OSError:
        return False


class MemoryMeter:
    """Peak memory of the code inside `with MemoryMeter(device) as mm:`.

    mm.base_mb: memory at entry; mm.peak_mb: peak during; mm.delta_mb = peak - base (what the code
    itself needed). CUDA: torch's allocated bytes (mm.reserved_mb: peak reserved). CPU: resident set
    size; the exact peak from the kernel's high-water mark (reset at entry) where Linux offers it
    (`kind` "rss"), else sampled every `interval_s` by a thread (`kind` "rss-sampled").
    """

    def __init__(self, device: str = "cpu", interval_s: float = 0.005):
        self.device, self.interval = device, interval_s
        self.cuda = device.startswith("cuda")
        self.kind = "cuda" if self.cuda else "rss"
        self.base_mb = self.peak_mb = self.reserved_mb = float("nan")
        self._thread = None

    def __enter__(self):
        gc.collect()
        if self.cuda:
            torch.cuda.synchronize()
            torch.cuda.empty_cache()
            torch.cuda.reset_peak_memory_stats()
            self.base_mb = torch.cuda.memory_allocated() / 2**20
            return self
        # Return free heap pages to the OS first: glibc serves even large blocks from free heap chunks
        # before it maps new ones, and reused resident pages would not show up as an RSS increase.
        _malloc_trim()
        self.base_mb = self.peak_mb = rss_mb()
        if not _reset_peak_rss():
            self.kind = "rss-sampled"
            self._stop = threading.Event()

            def sample():
                while not self._stop.wait(self.interval):
                    self.peak_mb = max(self.peak_mb, rss_mb())
            self._thread = threading.Thread(target=sample, daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc):
        if self.cuda:
            torch.cuda.synchronize()
            self.peak_mb = torch.cuda.max_memory_allocated() / 2**20
            self.reserved_mb = torch.cuda.max_memory_reserved() / 2**20
        elif self._thread is not None:
            self._stop.set()
            self._thread.join()
            self.peak_mb = max(self.peak_mb, rss_mb())
        else:
            self.peak_mb = max(self.base_mb, _peak_rss_mb(), rss_mb())
        return False

    @property
    def delta_mb(self) -> float:
        return self.peak_mb - self.base_mb


def _sample_prompt(tok, seed: int = 0, k: int = 1) -> tuple[list[str], list[str]]:
    """k GSM8K-style prompts (seeded synthetic word problems, no data download) and their answers."""
    from minipods.data import build_prompt, synthetic_problems
    items = synthetic_problems(k, seed=seed)
    return [build_prompt(tok, it["question"]) for it in items], [it["gold"] for it in items]


@dataclass
class Context:
    """What the in-process parts share: model, tokenizer, device and one fixed set of rollouts."""
    model: object = None
    tok: object = None
    device: str = "cpu"
    prompt: str = ""
    rollouts: object = None
    # CPU with a model loaded by name: the memory of the update and logprob parts is measured in a
    # fresh worker process (a long-lived process's heap history skews RSS even in exact mode)
    memory_worker: bool = False
    memory_parts: tuple = ()
    memory: dict | None = None


def _fixed_rollouts(ctx: Context, cfg: BenchConfig):
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
def _updater(model, ro, device: str, micro_batch_size: int):
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
        _sync(device)
        t0 = time.perf_counter()
        grpo_update(model, optimizer, batch, adv, micro_batch_size=micro_batch_size, max_grad_norm=1.0,
                    chunk_tokens=tcfg.logprob_chunk)
        _sync(device)
        return time.perf_counter() - t0, int(batch.completion_mask.sum())
    return update


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
    args = (b.prompt_ids, b.prompt_mask, b.completion_ids, b.completion_mask)
    ntok = max(int(b.completion_mask.sum()), 1)
    base = model.get_base_model() if hasattr(model, "get_base_model") else model

    def run(fn, **kw):
        model.zero_grad(set_to_none=True)
        with MemoryMeter(device) as mm:  # not timed: exact_cpu_memory slows CPU compute down
            logp = fn(model, *args, **kw)
            (-(logp.sum()) / ntok).backward()
            _sync(device)
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


def _isolated_memory(ctx: Context, cfg: BenchConfig) -> dict | None:
    """The memory numbers of the update and logprob parts from one fresh worker (None: measure here)."""
    if not ctx.memory_worker:
        return None
    if ctx.memory is None:
        ro = _fixed_rollouts(ctx, cfg)
        with tempfile.TemporaryDirectory(prefix="minipods-bench-") as d:
            path = str(Path(d) / "rollouts.pt")
            torch.save({k: getattr(ro, k) for k in ("prompt_ids", "prompt_mask", "completion_ids",
                                                    "completion_mask", "group", "n")}, path)
            ctx.memory = run_worker("memory", dict(
                model=cfg.model, dtype=cfg.dtype, device=ctx.device, threads=cfg.threads, seed=cfg.seed,
                lora_r=cfg.lora_r, lora_alpha=cfg.lora_alpha, rollouts=path, parts=list(ctx.memory_parts),
                m_values=[m for m in cfg.m_values if m <= len(ro)], micro_batch_size=cfg.micro_batch_size,
                logprob_batch=cfg.logprob_batch, logprob_chunk=cfg.logprob_chunk))
        if "error" in ctx.memory:
            raise RuntimeError(f"memory worker failed: {ctx.memory['error']}")
    return ctx.memory


def worker_memory(a: dict) -> dict:
    from minipods.model import load_policy
    from minipods.rollouts import Rollouts
    exact = exact_memory_for_process()  # before anything is allocated: the whole heap history is exact
    _set_threads(a["threads"])
    torch.manual_seed(a["seed"])
    model, _ = load_policy(a["model"], dtype=a["dtype"], device=a["device"], lora_r=a["lora_r"],
                           lora_alpha=a["lora_alpha"])
    d = torch.load(a["rollouts"])
    ro = Rollouts(d["prompt_ids"], d["prompt_mask"], d["completion_ids"], d["completion_mask"], d["group"],
                  [""] * len(d["group"]), d["n"])
    out: dict = {"exact_memory": exact}
    if "update" in a["parts"]:
        update = _updater(model, ro, a["device"], a["micro_batch_size"])
        out["update"] = {str(m): v for m, v in measure_update_memory(update, a["m_values"], a["device"]).items()}
    if "logprob" in a["parts"]:
        b = ro.select(list(range(min(a["logprob_batch"], len(ro)))))
        out["logprob"] = measure_logprob_memory(model, b, a["logprob_chunk"], a["device"])
    return out


def part_update(ctx: Context, cfg: BenchConfig) -> dict:
    ro = _fixed_rollouts(ctx, cfg)
    ms = [m for m in cfg.m_values if m <= len(ro)]
    if len(ms) < 2:
        raise ValueError(f"update part needs >= 2 m values <= n={len(ro)}, got {cfg.m_values}")
    update = _updater(ctx.model, ro, ctx.device, cfg.micro_batch_size)
    mem = _isolated_memory(ctx, cfg)
    if mem is None:
        peaks, where, exact = measure_update_memory(update, ms, ctx.device), "in-process", None
    else:
        update(ms[0])  # warm-up: optimizer state, lazy kernels
        peaks, where, exact = {int(k): v for k, v in mem["update"].items()}, "fresh worker", mem["exact_memory"]
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
    ro = _fixed_rollouts(ctx, cfg)
    b = ro.select(list(range(min(cfg.logprob_batch, len(ro)))))
    base = ctx.model.get_base_model() if hasattr(ctx.model, "get_base_model") else ctx.model
    mem = _isolated_memory(ctx, cfg)
    if mem is None:
        runs, where = measure_logprob_memory(ctx.model, b, cfg.logprob_chunk, ctx.device), "in-process"
    else:
        runs, where = mem["logprob"], "fresh worker"
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


# ---------------------------------------------------------------- part 4: selection
def _time_call(fn, min_time: float, rounds: int) -> float:
    """Seconds per call: best of `rounds` rounds, each long enough (>= min_time) to time reliably."""
    t0 = time.perf_counter()
    fn()
    one = max(time.perf_counter() - t0, 1e-7)
    reps = int(min(max(1, min_time / one), 10_000))
    best = float("inf")
    for _ in range(rounds):
        t0 = time.perf_counter()
        for _ in range(reps):
            fn()
        best = min(best, (time.perf_counter() - t0) / reps)
    return best


def part_select(sizes: list[int], seed: int = 0, quick: bool = False, m_frac: float = 0.25) -> dict:
    from minipods.downsample import max_variance
    rng = np.random.default_rng(seed)
    secs, ms = [], []
    for n in sizes:
        # correctness (0/1) + format bonus (0..0.1), like minipods.rewards.total_reward
        r = rng.integers(0, 2, n) + 0.025 * rng.integers(0, 5, n)
        m = max(1, int(n * m_frac))
        secs.append(_time_call(lambda: max_variance(r, m), min_time=0.02 if quick else 0.1, rounds=2 if quick else 3))
        ms.append(m)
    k_all, _ = fit_power_law(sizes, secs)
    big = [(n, s) for n, s in zip(sizes, secs) if n >= 1024]
    k_big = fit_power_law(*zip(*big))[0] if len(big) >= 2 else float("nan")
    return {"sizes": list(sizes), "m": ms, "m_frac": m_frac, "seconds": secs, "exponent": k_all,
            "exponent_large_n": k_big}


def rows_select(r: dict) -> list[list[str]]:
    rows = [["select", f"max_variance n={n:,}, m={m:,}", fmt_s(s)] for n, m, s in zip(r["sizes"], r["m"], r["seconds"])]
    rows.append(["select", "growth exponent (log-log slope), all n", f"{r['exponent']:.2f}"])
    if math.isfinite(r["exponent_large_n"]):
        rows.append(["select", "growth exponent, n >= 1024", f"{r['exponent_large_n']:.2f}"])
    return rows


# ---------------------------------------------------------------- part 5: beside TRL
def trl_available() -> bool:
    import importlib.util
    return importlib.util.find_spec("trl") is not None


def _trl_settings(cfg: BenchConfig, device: str) -> dict:
    from minipods.model import pick_dtype
    if (cfg.trl_prompts * cfg.trl_n) % cfg.micro_batch_size:
        raise ValueError("trl_prompts * trl_n must be a multiple of micro_batch_size")
    dt = {torch.float32: "float32", torch.bfloat16: "bfloat16", torch.float16: "float16"}[pick_dtype(cfg.dtype, device)]
    return dict(model=cfg.model, dtype=dt, device=device, threads=cfg.threads, seed=cfg.seed, prompts=cfg.trl_prompts,
                n=cfg.trl_n, max_new_tokens=cfg.trl_max_new_tokens, micro_batch_size=cfg.micro_batch_size,
                lora_r=cfg.lora_r, lora_alpha=cfg.lora_alpha, lr=5e-6, max_grad_norm=1.0, temperature=0.9,
                max_prompt_tokens=512, top_k=0)  # minipods samples without top-k; TRL: 0 = off


def run_worker(kind: str, args: dict, timeout: float | None = None) -> dict:
    """Run `python -m minipods.bench --worker KIND` in a fresh process; returns its result dict."""
    root = str(Path(__file__).resolve().parent.parent)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([root, os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep),
               TOKENIZERS_PARALLELISM="false")
    cmd = [sys.executable, "-m", "minipods.bench", "--worker", kind, "--worker-args", json.dumps(args)]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, cwd=root, env=env, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"error": f"worker {kind} timed out after {timeout} s"}
    for line in reversed(proc.stdout.splitlines()):
        if line.startswith(RESULT_TAG):
            return json.loads(line[len(RESULT_TAG):])
    tail = (proc.stderr or proc.stdout).strip().splitlines()[-15:]
    return {"error": f"worker {kind} exited {proc.returncode}: " + " | ".join(tail)}


def part_trl(cfg: BenchConfig, device: str) -> dict:
    if not trl_available():
        return {"skipped": TRL_SKIP_MSG}
    import importlib.metadata
    s = _trl_settings(cfg, device)
    mp = run_worker("minipods_step", s)
    tr = run_worker("trl_step", s)
    out = {"settings": s, "trl_version": importlib.metadata.version("trl"), "minipods": mp, "trl": tr}
    if "error" not in mp and "error" not in tr:
        out.update(time_ratio=ratio(tr["step_s"], mp["step_s"]),
                   cpu_time_ratio=ratio(tr["step_cpu_s"], mp["step_cpu_s"]),
                   rollout_ratio=ratio(tr["rollout_s"], mp["rollout_s"]),
                   update_ratio=ratio(tr["update_s"], mp["update_s"]),
                   mem_ratio=ratio(tr["peak_delta_mb"], mp["peak_delta_mb"]),
                   peak_ratio=ratio(tr["peak_mb"], mp["peak_mb"]))
    out["notes"] = TRL_NOTES
    return out


TRL_NOTES = [
    "both: same cached HF model folder, prompts (chat-formatted strings), n, max completion length, temperature 0.9, "
    "no top-k, LoRA r/alpha/all-linear/dropout 0, dtype, torch threads, AdamW (lr 5e-6, wd 0.1, betas 0.9/0.99), "
    "grad clip 1.0, beta=0 (no reference pass), micro-batch (TRL: per_device_train_batch_size + "
    "gradient accumulation), gradient checkpointing off, no autocast; 2 steps, the 2nd timed",
    "TRL loss_type 'dapo' (its default) = token-level mean over the whole accumulated batch, the same "
    "normalisation as minipods; std-scaled group advantages in both",
    "TRL computes per-token entropy in its fused LM head every step (for its metrics) and gathers metrics; "
    "minipods does not",
    "TRL step time is on_step_end to on_step_end (includes its dataloader/callback overhead); "
    "minipods times run_step. "
    "generate = sampling + rewards + advantages (TRL: _generate_and_score_completions; minipods: run_step's "
    "rollout_s); update = the rest. cpu = process CPU time, less sensitive than wall time to other jobs on a "
    "shared CPU",
    "memory: 'peak' = the process's peak RSS (CPU, normal allocator, so it includes glibc's cached heap) or "
    "torch allocated bytes (CUDA) during the warm step; '+X' = that peak minus the memory just before the step. "
    "TRL's process also holds trl/datasets/pandas imports",
]


def rows_trl(r: dict) -> list[list[str]]:
    if "skipped" in r:
        return [["trl", "minipods vs trl.GRPOTrainer", r["skipped"]]]
    s, mp, tr = r["settings"], r["minipods"], r["trl"]
    what = f"{s['prompts']} prompts x n={s['n']}, {s['max_new_tokens']} tok, LoRA r={s['lora_r']}, {s['dtype']}"
    rows = []
    for name, x in (("minipods GRPO step", mp), (f"trl {r.get('trl_version', '')} GRPOTrainer step", tr)):
        if "error" in x:
            rows.append(["trl", f"{name} ({what})", "failed: " + x["error"][:200]])
        else:
            rows.append(["trl", f"{name} ({what})",
                         f"{fmt_s(x['step_s'])} (cpu {fmt_s(x['step_cpu_s'])}; generate {fmt_s(x['rollout_s'])} + "
                         f"update {fmt_s(x['update_s'])}), "
                         f"peak {fmt_mb(x['peak_mb'])} (+{fmt_mb(x['peak_delta_mb'])})"])
    if "time_ratio" in r:
        rows.append(["trl", "TRL / minipods: step time, wall (cpu)",
                     f"{fmt_x(r['time_ratio'])} ({fmt_x(r['cpu_time_ratio'])})"])
        rows.append(["trl", "TRL / minipods: generate phase; update phase",
                     f"{fmt_x(r['rollout_ratio'])}; {fmt_x(r['update_ratio'])}"])
        rows.append(["trl", "TRL / minipods: memory (step increase; absolute peak)",
                     f"{fmt_x(r['mem_ratio'])}; {fmt_x(r['peak_ratio'])}"])
    return rows


def _set_threads(n: int) -> None:
    if n:
        torch.set_num_threads(n)


def worker_minipods_step(a: dict) -> dict:
    from minipods.data import synthetic_problems
    from minipods.model import load_policy
    from minipods.train import make_config, make_optimizer, run_step
    _set_threads(a["threads"])
    torch.manual_seed(a["seed"])
    model, tok = load_policy(a["model"], dtype=a["dtype"], device=a["device"], lora_r=a["lora_r"],
                             lora_alpha=a["lora_alpha"])
    cfg = make_config(model=a["model"], dtype=a["dtype"], method="grpo", n=a["n"], m=a["n"],
                      prompts_per_step=a["prompts"], max_new_tokens=a["max_new_tokens"],
                      max_prompt_tokens=a["max_prompt_tokens"], temperature=a["temperature"],
                      micro_batch_size=a["micro_batch_size"], gen_batch_size=a["prompts"] * a["n"], lr=a["lr"],
                      max_grad_norm=a["max_grad_norm"], optimizer="adamw", lora_r=a["lora_r"],
                      lora_alpha=a["lora_alpha"], seed=a["seed"], data="synthetic")
    device = str(next(model.parameters()).device)
    optimizer = make_optimizer(model, cfg, device)
    items = synthetic_problems(a["prompts"], seed=a["seed"])
    load_mb = torch.cuda.memory_allocated() / 2**20 if device.startswith("cuda") else rss_mb()
    run_step(model, tok, optimizer, cfg, items, 1)
    with MemoryMeter(device) as mm:
        t0, c0 = time.perf_counter(), time.process_time()
        row = run_step(model, tok, optimizer, cfg, items, 2)
        _sync(device)
        dt, cpu = time.perf_counter() - t0, time.process_time() - c0
    return {"step_s": dt, "step_cpu_s": cpu, "rollout_s": row["rollout_s"], "update_s": row["update_s"],
            "peak_delta_mb": mm.delta_mb, "peak_mb": mm.peak_mb, "memory_kind": mm.kind, "after_load_mb": load_mb,
            "tokens": row["tokens"],
            "process_max_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            "threads": torch.get_num_threads()}


def worker_trl_step(a: dict) -> dict:
    _set_threads(a["threads"])
    from datasets import Dataset
    from transformers import TrainerCallback
    from trl import GRPOConfig, GRPOTrainer

    from minipods.data import build_prompt, synthetic_problems
    from minipods.model import load_tokenizer, lora_config, resolve_model
    from minipods.rewards import total_reward

    path = resolve_model(a["model"])
    tok = load_tokenizer(path)
    items = synthetic_problems(a["prompts"], seed=a["seed"])
    ds = Dataset.from_list([{"prompt": build_prompt(tok, it["question"]), "gold": it["gold"]} for it in items])

    def minipods_reward(prompts, completions, gold, **kw):
        return [total_reward(c, g) for c, g in zip(completions, gold)]

    cuda = a["device"].startswith("cuda")
    B, mb = a["prompts"] * a["n"], a["micro_batch_size"]
    out_dir = tempfile.mkdtemp(prefix="minipods-bench-trl-")
    args = GRPOConfig(
        output_dir=out_dir, max_steps=2, per_device_train_batch_size=mb, gradient_accumulation_steps=B // mb,
        num_generations=a["n"], max_completion_length=a["max_new_tokens"], temperature=a["temperature"],
        top_p=1.0, top_k=a["top_k"], beta=0.0, num_iterations=1, loss_type="dapo", scale_rewards="group",
        learning_rate=a["lr"], lr_scheduler_type="constant", warmup_steps=0, weight_decay=0.1, adam_beta1=0.9,
        adam_beta2=0.99, max_grad_norm=a["max_grad_norm"], optim="adamw_torch", gradient_checkpointing=False,
        bf16=False, fp16=False, use_cpu=not cuda, model_init_kwargs={"dtype": a["dtype"]}, report_to="none",
        logging_strategy="no", save_strategy="no", disable_tqdm=True, seed=a["seed"], dataloader_num_workers=0,
        shuffle_dataset=False, log_completions=False)
    trainer = GRPOTrainer(model=path, reward_funcs=minipods_reward, args=args, train_dataset=ds,
                          processing_class=tok, peft_config=lora_config(a["lora_r"], a["lora_alpha"], 0.0))
    device = "cuda" if cuda else "cpu"
    load_mb = torch.cuda.memory_allocated() / 2**20 if cuda else rss_mb()
    res: dict = {}
    gen = {"s": 0.0}
    inner = trainer._generate_and_score_completions  # generation + rewards + advantages of one step

    def timed_generate(*a, **kw):
        t0 = time.perf_counter()
        try:
            return inner(*a, **kw)
        finally:
            _sync(device)
            gen["s"] += time.perf_counter() - t0
    trainer._generate_and_score_completions = timed_generate

    class StepTimer(TrainerCallback):
        def on_step_end(self, args, state, control, **kw):
            _sync(device)
            if state.global_step == 1:
                self.mm = MemoryMeter(device).__enter__()
                self.t0, self.c0, gen["s"] = time.perf_counter(), time.process_time(), 0.0
            elif state.global_step == 2:
                res["step_s"] = time.perf_counter() - self.t0
                res["step_cpu_s"] = time.process_time() - self.c0
                res["rollout_s"] = gen["s"]
                res["update_s"] = res["step_s"] - gen["s"]
                self.mm.__exit__(None, None, None)
                res.update(peak_delta_mb=self.mm.delta_mb, peak_mb=self.mm.peak_mb, memory_kind=self.mm.kind)

    trainer.add_callback(StepTimer())
    trainer.train()
    if "step_s" not in res:
        raise RuntimeError("TRL did not run 2 optimizer steps")
    res.update(after_load_mb=load_mb, threads=torch.get_num_threads(),
               process_max_rss_mb=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
    return res


# ---------------------------------------------------------------- driver
ROWS = {"rollout": rows_rollout, "update": rows_update, "logprob": rows_logprob, "select": rows_select,
        "trl": rows_trl, "cuda": rows_cuda}
WORKERS = {"minipods_step": worker_minipods_step, "trl_step": worker_trl_step, "cuda_recipe": worker_cuda_recipe,
           "memory": worker_memory}

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


def run_bench(cfg: BenchConfig, parts: list[str], model=None, tokenizer=None, log=print) -> dict:
    """Run the selected parts; returns the result dict (also what bench.json holds).
    `model`/`tokenizer` may be passed in (the tiny model in tests)."""
    from minipods.model import default_device, load_policy
    bad = [p for p in parts if p not in PARTS]
    if bad:
        raise ValueError(f"unknown part(s) {bad}; expected some of {', '.join(PARTS)}")
    parts = [p for p in PARTS if p in parts]  # fixed order: rollout feeds update and logprob
    _set_threads(cfg.threads)
    device = default_device() if cfg.device == "auto" else cfg.device
    t_start = time.perf_counter()
    ctx = Context(device=device)
    if any(p in MODEL_PARTS for p in parts):
        if model is None:
            log(f"loading {cfg.model} ({cfg.dtype}) ...")
            model, tokenizer = load_policy(cfg.model, dtype=cfg.dtype, device=device, lora_r=cfg.lora_r,
                                           lora_alpha=cfg.lora_alpha)
            ctx.memory_worker = True  # on CPU its memory is measured in a fresh process (loads it by name)
        ctx.model, ctx.tok = model, tokenizer
        ctx.device = str(next(model.parameters()).device)
        ctx.memory_worker = ctx.memory_worker and not ctx.device.startswith("cuda")
        ctx.memory_parts = tuple(p for p in ("update", "logprob") if p in parts)
        ctx.prompt = _sample_prompt(tokenizer, cfg.seed)[0][0]
    results: dict = {}
    for part in parts:
        log(f"[{part}] ...")
        t0 = time.perf_counter()
        if part == "rollout":
            results[part] = part_rollout(ctx, cfg)
        elif part == "update":
            results[part] = part_update(ctx, cfg)
        elif part == "logprob":
            results[part] = part_logprob(ctx, cfg)
        elif part == "select":
            results[part] = part_select(cfg.select_sizes, cfg.seed, cfg.quick)
        elif part == "trl":
            results[part] = part_trl(cfg, device)
        elif part == "cuda":
            results[part] = part_cuda(cfg)
        results[part]["part_s"] = time.perf_counter() - t0
    rows = [row for part in parts for row in ROWS[part](results[part])]
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


def _ints(s: str) -> list[int]:
    return [int(float(x)) for x in s.split(",") if x.strip()]


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m minipods.bench", description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    d = BenchConfig()
    p.add_argument("--parts", default=",".join(PARTS), help="comma-separated subset of: " + ", ".join(PARTS))
    p.add_argument("--quick", action="store_true", help="small sizes for a shared CPU (a few minutes), 1 thread")
    p.add_argument("--output", default="bench.json", help="where to write the JSON results")
    p.add_argument("--model", default=d.model, help="model for rollout/update/logprob/trl (offline default)")
    p.add_argument("--dtype", default=d.dtype, help="auto (bf16 on CUDA, fp32 on CPU) | float32 | bfloat16 | float16")
    p.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's; --quick: 1)")
    p.add_argument("--device", default=d.device, help="auto | cpu | cuda")
    p.add_argument("--seed", type=int, default=d.seed)
    p.add_argument("--n", type=int, default=None, help=f"rollouts per prompt (default {d.n})")
    p.add_argument("--max-new-tokens", type=int, default=None,
                   help=f"rollout length (default {d.max_new_tokens}; quick 64)")
    p.add_argument("--m-values", type=_ints, default=None, help="kept-rollout counts for the update part (2,4,8,16)")
    p.add_argument("--micro-batch-size", type=int, default=None,
                   help=f"sequences per forward/backward ({d.micro_batch_size})")
    p.add_argument("--repeats", type=int, default=None, help=f"timed repeats per update point ({d.repeats}; quick 1)")
    p.add_argument("--lora-r", type=int, default=None, help=f"LoRA rank ({d.lora_r})")
    p.add_argument("--lora-alpha", type=int, default=None, help=f"LoRA alpha ({d.lora_alpha})")
    p.add_argument("--logprob-batch", type=int, default=None,
                   help=f"sequences in the logprob part ({d.logprob_batch}; quick 4)")
    p.add_argument("--logprob-chunk", type=int, default=None,
                   help=f"tokens per chunk in the logprob part ({d.logprob_chunk}; quick 64)")
    p.add_argument("--select-sizes", type=_ints, default=None, help="n values for the select part")
    p.add_argument("--trl-prompts", type=int, default=None,
                   help=f"prompts per step in the trl part ({d.trl_prompts}; quick 2)")
    p.add_argument("--trl-n", type=int, default=None,
                   help=f"generations per prompt in the trl part ({d.trl_n}; quick 4)")
    p.add_argument("--trl-max-new-tokens", type=int, default=None,
                   help=f"completion length in the trl part ({d.trl_max_new_tokens}; quick 32)")
    p.add_argument("--cuda-model", default=None,
                   help=f"model of the cuda part ({d.cuda_model}; a hub id for the real weights)")
    p.add_argument("--cuda-prompts", type=int, default=None,
                   help="prompts per update in the cuda part (1: m=16 sequences; the paper's step: 8)")
    p.add_argument("--worker", choices=sorted(WORKERS), help=argparse.SUPPRESS)
    p.add_argument("--worker-args", default="{}", help=argparse.SUPPRESS)
    return p


def config_from_args(args) -> BenchConfig:
    cfg = BenchConfig(quick=args.quick, model=args.model, dtype=args.dtype, device=args.device, seed=args.seed)
    if args.quick:
        for k, v in QUICK.items():
            setattr(cfg, k, v)
        cfg.threads = 1
    for k in ("n", "max_new_tokens", "m_values", "micro_batch_size", "repeats", "lora_r", "lora_alpha",
              "logprob_batch", "logprob_chunk", "select_sizes", "trl_prompts", "trl_n", "trl_max_new_tokens",
              "cuda_model",
              "cuda_prompts", "threads"):
        v = getattr(args, k)
        if v is not None:
            setattr(cfg, k, v)
    return cfg


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    if args.worker:
        import warnings
        warnings.filterwarnings("ignore")
        res = WORKERS[args.worker](json.loads(args.worker_args))
        print(RESULT_TAG + json.dumps(res), flush=True)
        return 0
    parts = [p.strip() for p in args.parts.split(",") if p.strip()]
    try:
        cfg = config_from_args(args)
        out = run_bench(cfg, parts, log=lambda s: print(s, file=sys.stderr, flush=True))
    except ValueError as e:
        print(f"minipods.bench: error: {e}", file=sys.stderr)
        return 2
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
