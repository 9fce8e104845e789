"""Peak memory of a phase: one meter per device.

PODS's case (paper, Section 3): the update's memory grows with the rollouts it trains on, generation's
does not. MemoryMeter reads CUDA's allocator, or on a CPU the tensor allocator's events (torch's profiler)
summed in time order: exact, unlike the resident set size, but slow, so memory runs are never timed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import weakref
from pathlib import Path

import torch

from minipods.memory import on_cuda, peak_mb, reset_peak  # noqa: F401  (re-exported: the process-wide peak)
from minipods.model import cuda_device

RESULT_TAG = "MINIPODS_WORKER_RESULT "  # the worker's result line on stdout
MIB = 2 ** 20


def rss_mb() -> float:
    """This process's resident set size now, in MiB."""
    import psutil  # comes with accelerate
    return psutil.Process().memory_info().rss / MIB


class MemoryMeter:
    """Peak memory of the code inside `with MemoryMeter(device) as mm:`: mm.base_mb at entry (CUDA:
    allocated; CPU: 0), mm.peak_mb during, mm.delta_mb = peak - base, mm.reserved_mb (CUDA's peak reserved)."""

    def __init__(self, device: str = "cpu"):
        self.device, self.cuda = device, on_cuda(device)
        self.kind = "cuda" if self.cuda else "cpu-allocator"
        self.base_mb = self.peak_mb = self.reserved_mb = float("nan")

    def __enter__(self):
        if self.cuda:
            reset_peak(self.device)
            self.base_mb = torch.cuda.memory_allocated(cuda_device(self.device)) / MIB
        else:
            from torch.profiler import ProfilerActivity, profile
            self._prof = profile(activities=[ProfilerActivity.CPU], profile_memory=True)
            self._prof.__enter__()
            self.base_mb = 0.0
        return self

    def __exit__(self, *exc):
        if self.cuda:
            torch.cuda.synchronize(cuda_device(self.device))
            self.peak_mb = torch.cuda.max_memory_allocated(cuda_device(self.device)) / MIB
            self.reserved_mb = torch.cuda.max_memory_reserved(cuda_device(self.device)) / MIB
            return False
        self._prof.__exit__(*exc)
        events = [e for e in self._prof.profiler.kineto_results.events()
                  if e.name() == "[memory]" and e.device_type().name == "CPU"]
        cur = peak = 0
        for e in sorted(events, key=lambda e: e.start_ns()):
            cur += e.nbytes()
            peak = max(peak, cur)
        self.peak_mb = peak / MIB
        return False

    @property
    def delta_mb(self) -> float:
        return self.peak_mb - self.base_mb


def peak_allocated_bytes(fn) -> int:
    """Peak bytes the CPU tensor allocator held during fn() above what it held at the start."""
    with MemoryMeter("cpu") as mm:
        fn()
    return round(mm.peak_mb * MIB)


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


class _Saved:  # a weak-referenceable box for one tensor autograd saves for backward
    __slots__ = ("t", "__weakref__")


def peak_saved_bytes(model, fn) -> int:
    """Peak bytes of distinct non-parameter tensors autograd holds for backward while fn() runs (the
    activations, independent of the allocator): each from when it is saved until its box is collected."""
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
        box = _Saved()
        box.t = t
        weakref.finalize(box, release, ptr)
        return box
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda x: x.t if isinstance(x, _Saved) else x):
        fn()
    return st["peak"]


if __name__ == "__main__":  # the worker side of run_worker: python -m minipods.measure.memory TARGET ARGS_JSON
    import importlib
    import warnings
    warnings.filterwarnings("ignore")
    module, _, name = sys.argv[1].partition(":")
    result = getattr(importlib.import_module(module), name)(json.loads(sys.argv[2]))
    print(RESULT_TAG + json.dumps(result, default=float), flush=True)
