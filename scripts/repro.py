"""Where do two runs of the same seed part? `python scripts/repro.py`.

Seeded runs should repeat bit for bit on one machine and thread count; when one does not, the
question is which op first computed something else. This tool runs the same training steps twice
(in this process, with a fresh policy and the same seeds each time; or against a fingerprint file
that another process wrote, `--save` / `--against`) and fingerprints, in order, every tensor a step
makes: the RNG state at the step's start, every module's forward output (the policy's and the fast
engine's inference copy's, in call order), the gradient each module's backward passes on (in
backward order), the rollout tokens, the rewards and kept rows, every
trainable parameter's gradient before the optimizer steps, and the weights after it. It prints the
first fingerprint that differs, with the last one that agreed: a divergence located to an op.

A fingerprint is the shape plus the wrapping int64 sum of the tensor's bits (each element read as an
integer of its own width): any single changed bit changes it.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import torch

from minipods.cli import fail
from minipods.train import _setup, make_config, make_engine, run_step

_INT_OF_WIDTH = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}


def fingerprint(t: torch.Tensor) -> str:
    """'shape:sum-of-bits' of a tensor (bool/int/float of any width)."""
    t = t.detach().contiguous().cpu()
    bits = t.view(_INT_OF_WIDTH[t.element_size()]) if t.is_floating_point() else t.to(torch.int64)
    return f"{tuple(t.shape)}:{int(bits.sum(dtype=torch.int64))}"


class Recorder:
    """Collects (label, fingerprint) pairs; module names resolved from the policy and, once the fast
    engine has made it, its inference copy."""

    def __init__(self, model):
        self.rows: list[tuple[str, str]] = []
        self.names: dict[int, str] = {}
        self.prefix = ""
        self.model = model
        self.name_modules(model, "policy")

    def name_modules(self, model, prefix: str) -> None:
        for name, mod in model.named_modules():
            self.names.setdefault(id(mod), f"{prefix}.{name}" if name else prefix)

    def add(self, label: str, t) -> None:
        if isinstance(t, torch.Tensor):
            self.rows.append((f"{self.prefix}{label}", fingerprint(t)))

    def hook(self, module, inputs, output) -> None:
        if id(module) not in self.names and "_minipods_folded" in self.model.__dict__:
            self.name_modules(self.model.__dict__["_minipods_folded"].copy, "inference_copy")
        out = output[0] if isinstance(output, tuple) else getattr(output, "logits", output)
        if isinstance(out, torch.Tensor):
            self.add(self.names.get(id(module), type(module).__name__), out)

    def backward_hook(self, module, grad_input, grad_output) -> None:
        """The gradient a module's backward passes toward its input, in backward order."""
        g = next((t for t in grad_input if isinstance(t, torch.Tensor)), None)
        if g is not None:
            self.add(f"backward {self.names.get(id(module), type(module).__name__)}", g)


def record_run(cfg, steps: int, policy=None) -> list[tuple[str, str]]:
    """Fingerprints of `steps` training steps from a fresh policy, set up as train() sets it up (seeds,
    data, policy: minipods.train._setup). policy: a callable returning a fresh (model, tokenizer)
    (default: load cfg.model as training does)."""
    items, _, _, model, tok, device = _setup(cfg, *(policy() if policy else (None, None)))
    engine = make_engine(cfg, model, device)
    optimizer = engine.optimizer
    rec = Recorder(model)
    params = {n: p for n, p in model.named_parameters() if p.requires_grad}
    step_fn = optimizer.step

    def step_with_grads(*a, **kw):  # the gradients exactly as the optimizer receives them
        for n, p in params.items():
            rec.add(f"grad {n}", p.grad)
        return step_fn(*a, **kw)

    optimizer.step = step_with_grads
    handle = torch.nn.modules.module.register_module_forward_hook(rec.hook)
    back = torch.nn.modules.module.register_module_full_backward_hook(rec.backward_hook)
    try:
        for step in range(1, steps + 1):
            rec.prefix = f"step {step}: "
            rec.add("torch RNG state", torch.get_rng_state())
            row = run_step(model, tok, engine, cfg, items, step)
            rec.add("kept rows", torch.tensor([i for g in row["kept_idx"] for i in g]))
            rec.add("loss", torch.tensor(row["loss"], dtype=torch.float64))
            for n, p in params.items():
                rec.add(f"weight {n}", p)
    finally:
        handle.remove()
        back.remove()
    return rec.rows


def first_difference(a: list[tuple[str, str]], b: list[tuple[str, str]]) -> dict | None:
    """None when a == b; else the index, the differing pair and the last pair that agreed."""
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return {"index": i, "a": x, "b": y, "last_equal": a[i - 1] if i else None}
    if len(a) != len(b):
        i = min(len(a), len(b))
        return {"index": i, "a": a[i] if i < len(a) else None, "b": b[i] if i < len(b) else None,
                "last_equal": a[i - 1] if i else None}
    return None


def index_backward_check(passes: int = 30, threads: int = 2) -> dict:
    """The op that parted seeded runs, alone: m = 4 rows taking one prompt's (1, 3, 85, 64) values
    (the shared-prompt update's shape at --small), `passes` identical backward passes on `threads`
    threads. For advanced indexing (x[inv]), index_select, and x[inv] under
    torch.use_deterministic_algorithms: whether every pass gave the same gradient bit for bit, and
    ms per pass (forward + backward)."""
    import time

    g = torch.Generator().manual_seed(0)
    base = torch.randn(1, 85, 3, 64, generator=g, requires_grad=True)
    grad = torch.randn(4, 3, 149, 64, generator=g)  # the rows' prompt + completion positions
    inv = torch.zeros(4, dtype=torch.long)
    ways = {"x[inv]": (lambda x: x[inv], False), "x.index_select(0, inv)": (lambda x: x.index_select(0, inv), False),
            "x[inv], deterministic algorithms": (lambda x: x[inv], True)}
    saved, out = torch.get_num_threads(), {}
    torch.set_num_threads(threads)
    try:
        for name, (take, det) in ways.items():
            torch.use_deterministic_algorithms(det)
            grads, t0 = [], time.perf_counter()
            for _ in range(passes):
                base.grad = None
                rows = take(base.transpose(1, 2))  # (4, 3, 85, 64), as the cache holds them
                torch.cat([rows, torch.zeros(4, 3, 64, 64)], 2).backward(grad)
                grads.append(base.grad.clone())
            out[name] = {"repeats": all(torch.equal(grads[0], x) for x in grads[1:]),
                         "ms_per_pass": (time.perf_counter() - t0) / passes * 1e3}
    finally:
        torch.use_deterministic_algorithms(False)
        torch.set_num_threads(saved)
    return out


def build_parser() -> argparse.ArgumentParser:
    from minipods.cli import Parser

    p = Parser(prog="python scripts/repro.py", description=__doc__.split("\n\n")[0])
    p.add_argument("--steps", type=int, default=4, help="training steps per run (default: 4)")
    p.add_argument("--seed", type=int, default=0, help="the runs' seed (default: 0)")
    p.add_argument("--preset", default="small", help="train preset (default: small)")
    p.add_argument("--fast", action=argparse.BooleanOptionalAction, default=True, help="the fast engine (default: on)")
    p.add_argument("--save", default=None, help="write this run's fingerprints to FILE (one run only)")
    p.add_argument("--against", default=None, help="compare one run with the fingerprints in FILE")
    p.add_argument("--index-check", action="store_true",
                   help="only run index_backward_check (the op that parted runs, alone, 2 threads) and exit")
    return p


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    if args.index_check:
        for name, r in index_backward_check().items():
            print(f"{name:34s} {'identical' if r['repeats'] else 'DIFFER':9s} over 30 backward passes, "
                  f"{r['ms_per_pass']:.2f} ms per pass")
        return 0
    try:
        if args.steps < 1:
            raise ValueError(f"--steps must be >= 1, got {args.steps}")
        cfg = make_config(args.preset, seed=args.seed, fast=args.fast, progress=False, eval_every=0)
        a = record_run(cfg, args.steps)
        if args.save:
            Path(args.save).write_text(json.dumps(a))
            print(f"{len(a)} fingerprints of {args.steps} step(s) written to {args.save}")
            return 0
        b = json.loads(Path(args.against).read_text()) if args.against else record_run(cfg, args.steps)
    except (ValueError, OSError) as e:
        return fail("scripts/repro.py", e)
    diff = first_difference(a, [tuple(x) for x in b])
    if diff is None:
        print(f"identical: {len(a)} fingerprints of {args.steps} step(s), seed {args.seed}, "
              f"{torch.get_num_threads()} thread(s)")
        return 0
    print(f"first difference at fingerprint {diff['index']} of {len(a)}:\n  run A {diff['a']}\n  run B {diff['b']}\n"
          f"  last equal: {diff['last_equal']}")
    return 1


if __name__ == "__main__":
    sys.exit(main())
