"""Peak memory of a phase: the CUDA allocator on a GPU, the resident set size of a fresh process on CPU.

PODS's case (paper, Section 3) is that the update's memory grows with the rollouts it trains on while
generation's does not; to show it, a phase's peak memory must be measured, not guessed. One meter for
the whole package:

  peak_mb(device), reset_peak(device)  the process-wide peak since the last reset (train's per-step
                                       `peak_mem_mb`, compare's per-arm reset)
  MemoryMeter(device)                  the peak of one `with` block, and its increase over the start
  exact_cpu_memory(), exact_memory_for_process()
                                       make CPU RSS follow live memory (glibc's mmap threshold)
  run_worker(target, args)             run a measurement in a fresh Python process
  peak_saved_bytes(model, fn)          what autograd holds for backward (activations), counted exactly
  peak_allocated_bytes(fn)             the CPU allocator's peak during fn (every tensor, transients too),
                                       from the profiler's allocation events: exact, no glibc in the way

On CUDA, torch counts allocated bytes itself. On CPU there is only the process's resident set size
(RSS), and glibc makes it a poor witness: it serves blocks below its mmap threshold (which grows to
32 MiB) from its heap and keeps freed heap memory, cached and fragmented, so RSS peaks overstate
(trimmed heap faulted in again) or understate (cached heap reused) what a computation needs, by a
factor that depends on what ran before in the process. So exact CPU numbers come from a fresh
worker process (no heap history) with a 64 KiB mmap threshold (every tensor of 64 KiB or more is
mapped and unmapped on its own), where the peak RSS increase is the peak of live memory (checked
against glibc's mallinfo2 accounting). Fresh pages cost time (CPU compute runs slower), so only
memory measurements use that mode, never timings.
"""

from __future__ import annotations

import contextlib
import ctypes
import gc
import json
import os
import resource
import subprocess
import sys
import threading
import weakref
from pathlib import Path

import torch

M_MMAP_THRESHOLD = -3  # glibc mallopt parameter
EXACT_MMAP_THRESHOLD = 64 << 10  # allocations >= 64 KiB get their own mapping, unmapped on free
DEFAULT_MMAP_THRESHOLD = 32 << 20  # where glibc's dynamic threshold settles once large blocks were freed
RESULT_TAG = "MINIPODS_WORKER_RESULT "  # the worker's result line on stdout

_EXACT_PROCESS = False  # exact_memory_for_process() switched the whole process to exact mode


def _is_cuda(device: str) -> bool:
    return device.startswith("cuda") or (device == "auto" and torch.cuda.is_available())


def _cuda(device: str):
    """The CUDA device to read: cuda:N itself (not the current device), None (current) for cuda/auto."""
    return torch.device(device) if device.startswith("cuda") else None


# ---------------------------------------------------------------- the process-wide peak
def rss_mb() -> float:
    """This process's resident set size now, in MiB."""
    import psutil  # comes with accelerate
    return psutil.Process().memory_info().rss / 2**20


def _peak_rss_mb() -> float | None:
    """The kernel's high-water mark of this process's RSS (VmHWM), Linux only."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024  # kB
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


def peak_mb(device: str = "cpu") -> float:
    """Peak memory since the last reset_peak(device) (or process start), in MiB: CUDA's max allocated
    bytes, else the process's peak RSS (VmHWM; getrusage's ru_maxrss where /proc is missing, which
    never resets)."""
    if _is_cuda(device):
        return torch.cuda.max_memory_allocated(_cuda(device)) / 2**20
    hwm = _peak_rss_mb()
    return hwm if hwm is not None else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB


def reset_peak(device: str = "cpu") -> bool:
    """Start peak_mb(device) afresh (e.g. before each arm of a comparison run in one process).
    Returns False where the CPU peak cannot be reset (not Linux)."""
    gc.collect()
    if _is_cuda(device):
        torch.cuda.synchronize(_cuda(device))
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats(_cuda(device))
        return True
    return _reset_peak_rss()


def malloc_trim() -> None:
    """Give glibc's free heap pages back to the OS (no-op elsewhere)."""
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass


# ---------------------------------------------------------------- exact CPU memory (glibc)
def _set_mmap_threshold(nbytes: int):
    """mallopt(M_MMAP_THRESHOLD, nbytes); returns libc if glibc accepted it, else None."""
    try:
        libc = ctypes.CDLL("libc.so.6")
        return libc if libc.mallopt(M_MMAP_THRESHOLD, nbytes) == 1 else None
    except (OSError, AttributeError):
        return None


@contextlib.contextmanager
def exact_cpu_memory(device: str = "cpu"):
    """Make CPU RSS follow live memory inside the block (glibc only); yields whether that took effect.
    A no-op on CUDA (the allocator counts exactly) and inside an exact worker (already on)."""
    if _EXACT_PROCESS and not _is_cuda(device):
        yield True
        return
    libc = None if _is_cuda(device) else _set_mmap_threshold(EXACT_MMAP_THRESHOLD)
    try:
        yield libc is not None
    finally:
        if libc is not None:
            libc.mallopt(M_MMAP_THRESHOLD, DEFAULT_MMAP_THRESHOLD)


def exact_memory_for_process() -> bool:
    """exact_cpu_memory for the rest of this process: call it first thing in a fresh worker, so that the
    whole heap history is exact. Returns whether it took effect (glibc)."""
    global _EXACT_PROCESS
    _EXACT_PROCESS = _set_mmap_threshold(EXACT_MMAP_THRESHOLD) is not None
    return _EXACT_PROCESS


# ---------------------------------------------------------------- the peak of one phase
class MemoryMeter:
    """Peak memory of the code inside `with MemoryMeter(device) as mm:`.

    mm.base_mb: memory at entry; mm.peak_mb: peak during; mm.delta_mb = peak - base (what the code
    itself needed). CUDA: torch's allocated bytes (mm.reserved_mb: peak reserved). CPU: resident set
    size; the exact peak from the kernel's high-water mark (reset at entry) where Linux offers it
    (`kind` "rss"), else sampled every SAMPLE_S seconds by a thread (`kind` "rss-sampled"). For CPU
    numbers that match live memory, measure in exact mode (exact_cpu_memory, or a fresh worker).
    """

    SAMPLE_S = 0.005

    def __init__(self, device: str = "cpu"):
        self.device, self.cuda = device, _is_cuda(device)
        self.kind = "cuda" if self.cuda else "rss"
        self.base_mb = self.peak_mb = self.reserved_mb = float("nan")
        self._thread = None

    def __enter__(self):
        if self.cuda:
            reset_peak(self.device)
            self.base_mb = torch.cuda.memory_allocated(_cuda(self.device)) / 2**20
            return self
        # Free heap pages back to the OS first: glibc serves even large blocks from free heap chunks
        # before it maps new ones, and reused resident pages would not show up as an RSS increase.
        gc.collect()
        malloc_trim()
        self.base_mb = self.peak_mb = rss_mb()
        if not _reset_peak_rss():  # after the trim: the high-water mark starts at base_mb
            self.kind = "rss-sampled"
            self._stop = threading.Event()

            def sample():
                while not self._stop.wait(self.SAMPLE_S):
                    self.peak_mb = max(self.peak_mb, rss_mb())
            self._thread = threading.Thread(target=sample, daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc):
        if self.cuda:
            torch.cuda.synchronize(_cuda(self.device))
            self.peak_mb = torch.cuda.max_memory_allocated(_cuda(self.device)) / 2**20
            self.reserved_mb = torch.cuda.max_memory_reserved(_cuda(self.device)) / 2**20
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


# ---------------------------------------------------------------- a fresh worker process
def run_worker(target: str, args: dict) -> dict:
    """Run `target(args)` ("package.module:function", returning a JSON-able dict) in a fresh Python
    process (`python -m minipods.measure.memory`); returns its dict, or {"error": ...} if the worker failed."""
    root = str(Path(__file__).resolve().parents[2])  # the folder that holds the minipods package
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([root, os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep),
               TOKENIZERS_PARALLELISM="false")
    cmd = [sys.executable, "-m", "minipods.measure.memory", target, json.dumps(args)]
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=root, env=env)
    for line in reversed(proc.stdout.splitlines()):
        if line.startswith(RESULT_TAG):
            return json.loads(line[len(RESULT_TAG):])
    tail = (proc.stderr or proc.stdout).strip().splitlines()[-15:]
    return {"error": f"worker {target} exited {proc.returncode}: " + " | ".join(tail)}


def _worker_main(target: str, args_json: str) -> int:
    import importlib
    import warnings
    warnings.filterwarnings("ignore")
    module, _, name = target.partition(":")
    result = getattr(importlib.import_module(module), name)(json.loads(args_json))
    print(RESULT_TAG + json.dumps(result, default=float), flush=True)
    return 0


# ---------------------------------------------------------------- activations held for backward
class _Saved:  # a weak-referenceable box for one tensor autograd saves for backward
    __slots__ = ("t", "__weakref__")

    def __init__(self, t):
        self.t = t


def peak_saved_bytes(model, fn) -> int:
    """Peak bytes of distinct non-parameter tensors autograd holds for backward while fn() runs: the
    activations, exactly and independent of the allocator. A tensor counts from when autograd saves it
    until backward releases it (its box is garbage-collected)."""
    params = {p.untyped_storage().data_ptr() for p in model.parameters()}
    live, st = {}, {"cur": 0, "peak": 0}  # storage ptr -> [bytes, boxes alive]

    def release(ptr):
        live[ptr][1] -= 1
        if live[ptr][1] == 0:
            st["cur"] -= live.pop(ptr)[0]

    def pack(t):
        ptr = t.untyped_storage().data_ptr()
        if ptr in params:
            return t
        if ptr not in live:
            live[ptr] = [t.untyped_storage().nbytes(), 0]
            st["cur"] += live[ptr][0]
            st["peak"] = max(st["peak"], st["cur"])
        live[ptr][1] += 1
        box = _Saved(t)
        weakref.finalize(box, release, ptr)
        return box

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda x: x.t if isinstance(x, _Saved) else x):
        fn()
    return st["peak"]


# ---------------------------------------------------------------- every CPU allocation
def peak_allocated_bytes(fn) -> int:
    """Peak bytes the CPU tensor allocator held during fn() above what it held at the start: every
    tensor (activations, gradients, kernels' temporaries), from the allocation and free events torch's
    profiler records (profile_memory), summed in time order. The CPU analogue of CUDA's
    max_memory_allocated, exact and independent of glibc; slow (every op is recorded): measuring only."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        fn()
    events = [e for e in prof.profiler.kineto_results.events() if e.name() == "[memory]" and e.device_type().name == "CPU"]
    cur = peak = 0
    for e in sorted(events, key=lambda e: e.start_ns()):
        cur += e.nbytes()
        peak = max(peak, cur)
    return peak


if __name__ == "__main__":  # the worker side of run_worker: python -m minipods.measure.memory TARGET ARGS_JSON
    sys.exit(_worker_main(*sys.argv[1:3]))
