"""Helpers every bench part shares (fits, formatting, the table, timing); they import nothing of measure."""

from __future__ import annotations

import math
import time

import numpy as np
import torch


def fit_linear(xs, ys) -> tuple[float, float, float]:
    """Least-squares line y = slope * x + intercept; returns (slope, intercept, r2)."""
    x, y = np.asarray(xs, dtype=float), np.asarray(ys, dtype=float)
    if x.size < 2:
        raise ValueError("need at least 2 points to fit a line")
    slope, intercept = np.polyfit(x, y, 1)
    res, ss = y - (slope * x + intercept), float(((y - y.mean()) ** 2).sum())
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
    return "n/a" if s is None or not math.isfinite(s) else f"{s:.2f} s" if s >= 1 else f"{s * 1e3:.1f} ms" if s >= 1e-3 \
        else f"{s * 1e6:.1f} µs"


def fmt_mb(mb: float) -> str:
    return "n/a" if mb is None or not math.isfinite(mb) else f"{mb / 1024:.2f} GB" if abs(mb) >= 1024 else f"{mb:.0f} MB"


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
        torch.cuda.synchronize(torch.device(device))


def best_seconds(fn, min_time: float = 0.3, rounds: int = 3, device: str = "cpu") -> float:
    """Best-of-`rounds` seconds per call, each round repeating fn for >= min_time."""
    fn()  # warm-up
    best = float("inf")
    for _ in range(rounds):
        k, t0, dt = 0, time.perf_counter(), 0.0
        while dt < min_time:
            fn()
            k += 1
            sync(device)
            dt = time.perf_counter() - t0
        best = min(best, dt / k)
    return best


def grpo_timer(model, optimizer, micro_batch_size: int, chunk_tokens: int = 512, max_grad_norm: float | None = 1.0,
               device: str = "cpu"):
    """update(batch, advantages) -> (seconds, grpo_update's output) as training runs it, queue drained around."""
    from minipods.fast.update import shared_logprobs
    from minipods.grpo import grpo_update
    def update(batch, advantages):
        sync(device)
        t0 = time.perf_counter()
        out = grpo_update(model, optimizer, batch, advantages, micro_batch_size=micro_batch_size,
                          max_grad_norm=max_grad_norm, chunk_tokens=chunk_tokens, logprob_fn=shared_logprobs)
        sync(device)
        return time.perf_counter() - t0, out
    return update
