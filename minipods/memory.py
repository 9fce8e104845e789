"""Peak memory of the process (train's per-step peak_mem_mb; minipods.measure meters phases with it):
CUDA's allocator on a GPU, the peak resident set (Linux's VmHWM, resettable) on a CPU. Not from the paper."""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path

import torch

from minipods.model import cuda_device


def on_cuda(device: str) -> bool:
    return device.startswith("cuda") or (device == "auto" and torch.cuda.is_available())


def _vm_hwm_mb() -> float | None:
    """Linux's VmHWM (peak resident set, which reset_peak resets) in MiB; None without /proc."""
    try:
        line = next(x for x in Path("/proc/self/status").read_text().splitlines() if x.startswith("VmHWM:"))
    except (OSError, StopIteration):
        return None
    return int(line.split()[1]) / 1024  # kB


def peak_mb(device: str = "cpu") -> float | None:
    """MiB since the last reset_peak(device): CUDA's max allocated bytes, else the peak resident set (None: unknown)."""
    if on_cuda(device):
        return torch.cuda.max_memory_allocated(cuda_device(device)) / 2**20
    hwm = _vm_hwm_mb()
    if hwm is None:  # not Linux: getrusage's peak, which never resets (bytes on macOS, KiB elsewhere)
        with contextlib.suppress(ImportError):  # no resource module (Windows): None, null in metrics.jsonl
            import resource
            hwm = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / (2**20 if sys.platform == "darwin" else 1024)
    return hwm


def reset_peak(device: str = "cpu") -> bool:
    """Start peak_mb(device) afresh; False where the CPU peak cannot be reset (not Linux >= 4.0)."""
    import gc
    gc.collect()
    if on_cuda(device):
        torch.cuda.synchronize(cuda_device(device))
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats(cuda_device(device))
        return True
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return _vm_hwm_mb() is not None
    except OSError:
        return False
