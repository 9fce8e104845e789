"""Performance benchmark: `python -m minipods.bench` (table on stdout, numbers in bench.json).

PODS rests on an asymmetry (paper, Section 3): generating rollouts is cheap, updating on them is not.
The parts (PARTS, in order, each `part(ctx, cfg) -> dict` with `rows(result)`; settings: config.py):

  rollout    one batched generate of n vs n single calls; fast vs plain rollouts and the roofline (speed.py)
  update     time and peak memory for m = 2 ... 16 kept of one fixed set; grpo_update's log-prob passes (speed.py)
  select     max_variance time for n = 16 ... 1,000,000 and its log-log growth exponent
  costmodel  rollout and update seconds as lines: s/step of GRPO and PODS, break-even (costmodel.py)

`--quick`: sizes for a shared 2-core CPU, 1 torch thread (2 ran far slower). TRL: scripts/vs_trl.py; chunked log-prob memory:
scripts/logprob_memory.py; GPU: scripts/gpu_step.py."""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from dataclasses import asdict
from pathlib import Path

import torch

from minipods.cli import Parser, add_dataclass_args, check_choices, check_positive, fail, overrides
from minipods.measure import costmodel, phases
from minipods.measure.common import format_table
from minipods.measure.config import DTYPES, POSITIVE, QUICK, BenchConfig, Context

PARTS = {"rollout": (phases.part_rollout, phases.rows_rollout), "update": (phases.part_update, phases.rows_update),
         "select": (phases.part_select, phases.rows_select),
         "costmodel": (costmodel.part_costmodel, costmodel.rows_costmodel)}  # run in this order
MODEL_PARTS = ("rollout", "update", "costmodel")  # parts that use the in-process model
PROG = "python -m minipods.bench"

NOTES = {
    "rollout": "batched/sequential: one generate call decodes all n sequences per forward pass, so the weights are "
               "read once per step for n tokens; why generating many rollouts is cheap (PODS's premise)",
    "update": "update time grows ~linearly with the m kept rollouts (never with the n generated); peak memory is set "
              "by the micro-batch, so it stops growing once m >= micro-batch (memory: runs apart from the timed ones)",
    "select": "max_variance sorts once (O(n log n)) and scores m+1 candidates: exponent ~1; at small n fixed "
              "numpy overhead dominates, which pulls the all-n exponent below 1",
}


def validate(cfg: BenchConfig, parts: list[str]) -> None:
    """Raise a one-line ValueError naming the flag, before any loading (parts=None: the settings alone)."""
    def need(ok: bool, msg: str):
        if not ok:
            raise ValueError(msg)
    bad = [p for p in parts or () if p not in PARTS]
    need(parts is None or (parts and not bad), f"unknown part(s) {bad or parts}; expected some of {', '.join(PARTS)}")
    check_choices(cfg, {"dtype": DTYPES})
    need(cfg.device in ("auto", "cpu") or cfg.device.startswith("cuda"), f"--device must be auto, cpu or cuda[:N], "
         f"got {cfg.device!r}")
    need(cfg.threads >= 0, f"--threads must be >= 0, got {cfg.threads}")
    check_positive(cfg, POSITIVE)
    for k in ("m_values", "select_sizes"):
        v = getattr(cfg, k)
        need(bool(v) and min(v) >= 1, f"--{k.replace('_', '-')} must be positive integers, got {v}")
    parts = parts or ()
    if "update" in parts or "costmodel" in parts:
        need(len([m for m in cfg.m_values if m <= cfg.n]) >= 2,
             f"the {'update' if 'update' in parts else 'costmodel'} part needs >= 2 --m-values <= --n={cfg.n}, got {cfg.m_values}")


def model_context(cfg: BenchConfig, device: str, model=None, tokenizer=None, log=print) -> Context:
    """The model parts' context: the given policy (else --model loaded as training loads it) and one prompt."""
    from minipods.data import build_prompt, synthetic_problems
    from minipods.model import load_policy
    from minipods.twins import arch as _twins  # noqa: F401  (registers the random: model names)
    if model is None:
        log(f"loading {cfg.model} ({cfg.dtype}) ...")
        model, tokenizer = load_policy(cfg.model, dtype=cfg.dtype, device=device, lora_r=cfg.lora_r,
                                       lora_alpha=cfg.lora_alpha)
    # one GSM8K-style prompt: a seeded synthetic word problem (no data download)
    prompt = build_prompt(tokenizer, synthetic_problems(1, seed=cfg.seed)[0]["question"])
    return Context(device=str(next(model.parameters()).device), model=model, tok=tokenizer, prompt=prompt)


def run_bench(cfg: BenchConfig, parts: list[str], model=None, tokenizer=None, log=print) -> dict:
    """The selected parts' results (bench.json); without `model`/`tokenizer` the model parts load --model."""
    import importlib.metadata as md
    import importlib.util

    from minipods.model import default_device
    validate(cfg, parts)
    parts = [p for p in PARTS if p in parts]  # fixed order: rollout feeds update
    if cfg.threads:  # 0: torch's default
        torch.set_num_threads(cfg.threads)
    device, t_start = (default_device() if cfg.device == "auto" else cfg.device), time.perf_counter()
    ctx = model_context(cfg, device, model, tokenizer, log) if any(p in MODEL_PARTS for p in parts) \
        else Context(device=device)
    results: dict = {}
    for part in parts:
        log(f"[{part}] ...")
        t0 = time.perf_counter()
        results[part] = PARTS[part][0](ctx, cfg)
        results[part]["part_s"] = time.perf_counter() - t0
    rows = [row for part in parts for row in PARTS[part][1](results[part])]
    ver = lambda d: md.version(d) if importlib.util.find_spec(d) else None  # noqa: E731
    meta = {"config": asdict(cfg), "parts": parts, "device": device, "threads": torch.get_num_threads(),
            "cpu_count": os.cpu_count(), "platform": platform.platform(), "python": platform.python_version(),
            "versions": {d: ver(d) for d in ("torch", "transformers", "peft", "trl", "bitsandbytes")},
            "gpu": torch.cuda.get_device_name() if torch.cuda.is_available() else None,
            "total_s": time.perf_counter() - t_start, "time": time.strftime("%Y-%m-%dT%H:%M:%S")}
    return {"meta": meta, "parts": results, "table": format_table(rows), "rows": rows,
            "notes": [f"{p}: {NOTES[p]}" for p in parts if p in NOTES]}


def build_parser(prog: str = PROG) -> argparse.ArgumentParser:
    """The bench-only flags, then one flag per BenchConfig field (cli.add_dataclass_args)."""
    p = Parser(prog=prog, description=__doc__.split("\n\n")[0])
    p.add_argument("--parts", default=",".join(PARTS),
                   help="comma-separated subset of: " + ", ".join(PARTS) + " (default: all)")
    p.add_argument("--quick", action="store_true", help="small sizes for a shared CPU (a few minutes), 1 thread")
    p.add_argument("--output", default="bench.json", help="where to write the JSON results (default: bench.json)")
    add_dataclass_args(p, BenchConfig, skip=("quick",))
    return p


def config_from_args(args: argparse.Namespace) -> BenchConfig:
    """Defaults, then QUICK (with --quick; 1 thread), then the flags given."""
    quick = {**QUICK, "threads": 1} if args.quick else {}
    return BenchConfig(quick=args.quick, **(quick | overrides(args, BenchConfig, skip=("quick",))))


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
    print("\n".join(["\nnotes:"] + [f"- {n}" for n in out["notes"]]))
    Path(args.output).parent.mkdir(parents=True, exist_ok=True)
    Path(args.output).write_text(json.dumps(out, indent=1, default=float))
    print(f"\nwrote {args.output}")
    return 0
