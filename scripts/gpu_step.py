"""The planner against one capped step on a GPU: scripts/gpu_check.sh's `paper` and `consumer` stages.

`python scripts/gpu_step.py --preset paper --gpu-gb 24` (every `python -m minipods.plan` flag, and
--device, --output): one full step of the recipe (generation, update) and one evaluation call, on
the architecture twin of its model (minipods.twins.arch: real shapes, random weights, offline), under
a --gpu-gb cap; each phase's measured peaks beside the planner's (minipods.measure.plan). The recipe
is loaded as training loads it and the update fed random ids (minipods.measure.gpu).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import torch

from minipods.cli import Parser, add_dataclass_args, fail, overrides
from minipods.measure.common import format_table, grpo_timer
from minipods.measure.gpu import load_recipe, recipe_batch, twin_prompts
from minipods.measure.memory import MemoryMeter
from minipods.measure.plan import PlanConfig, plan
from minipods.model import cuda_device

PROG = "python scripts/gpu_step.py"
MIB, GIB = 2 ** 20, 2 ** 30
TOLERANCE = 0.10  # the planner's peak against the measured one: PASS within 10%


def _meter(device: str, fn) -> dict:
    """Peaks of fn (memory.MemoryMeter): CUDA allocated and reserved, and the device's used memory
    after it; CPU: the allocator's peak above the start (reserved and device-used: None)."""
    with MemoryMeter(device) as mm:
        fn()
    if not device.startswith("cuda"):
        return {"allocated": round(mm.peak_mb * MIB), "reserved": None, "device_used": None}
    free, total = torch.cuda.mem_get_info(cuda_device(device))
    return {"allocated": round(mm.peak_mb * MIB), "reserved": round(mm.reserved_mb * MIB), "device_used": total - free}


def measure_phases(pc: PlanConfig, device: str) -> dict:
    """One full step of pc's recipe (generation, update) and one evaluation call, on the twin of its
    model, under a cap of pc.gpu_gb GiB (CUDA: set_per_process_memory_fraction): each phase's peaks
    (_meter) beside the planner's (CPU: both above the weights, LoRA and optimizer state). PASS when
    every allocated peak is within TOLERANCE of the planner's (CUDA only; a CPU is not judged)."""
    from minipods.fast.rollouts import generate_rollouts

    cuda = device.startswith("cuda")
    if cuda:
        total = torch.cuda.get_device_properties(cuda_device(device)).total_memory
        torch.cuda.set_per_process_memory_fraction(min(1.0, pc.gpu_gb * GIB / total), cuda_device(device))
    p = plan(pc)
    r = p["recipe"]
    model, tok, opt = load_recipe("random:" + r.model.removeprefix("random:"), r.quantize, r.lora_r, r.lora_r,
                                  r.ckpt, r.optimizer, device)
    batch, adv = recipe_batch(model, r.prompts, r.m, r.prompt_tokens + r.new_tokens, prompt_tokens=r.prompt_tokens)
    update = grpo_timer(model, opt, r.micro_batch, r.chunk, 0.1, device)
    prompts, shape = twin_prompts(max(r.prompts, r.eval_batch), r.prompt_tokens, 0), []

    def generate():
        ro = generate_rollouts(model, tok, prompts[:r.prompts], r.n, max_new_tokens=r.new_tokens,
                               batch_size=r.gen_batch, max_prompt_tokens=r.prompt_tokens, fold_adapter=False)
        shape.extend([int(ro.prompt_ids.shape[1]), int(ro.meta["steps"])])

    update(batch, adv)  # warm-up: the optimizer state exists from the first step on
    generate_rollouts(model, tok, prompts[:1], 1, max_new_tokens=2, fold_adapter=False)
    runs = {"generation": generate, "update": lambda: update(batch, adv),
            "evaluation": lambda: generate_rollouts(model, tok, prompts[:r.eval_batch], 1, do_sample=False,
                                                    max_new_tokens=r.eval_tokens, batch_size=r.eval_batch)}
    static = sum(b for _, b, _ in p["generation"]["parts"][:4])  # weights, LoRA, optimizer state
    phases = {}
    for ph, fn in runs.items():
        m = _meter(device, fn)
        pred = p[ph]["peak"] - (0 if cuda else static)
        phases[ph] = {**m, "predicted": pred, "ratio": m["allocated"] / pred}
    ok = all(abs(x["ratio"] - 1) <= TOLERANCE for x in phases.values())
    return {"check": "step", "preset": pc.preset, "model": r.model, "cap_gib": pc.gpu_gb, "prompts": r.prompts,
            "n": r.n, "m": r.m, "eval_batch": r.eval_batch, "generated_shape": shape, "static_predicted": static,
            "phases": phases, "verdict": ("PASS" if ok else "FAIL") if cuda else "not judged on a CPU",
            "device": torch.cuda.get_device_name(cuda_device(device)) if cuda else "cpu"}


def rows_phases(res: dict) -> list[list[str]]:
    """Table rows: per phase, the planner beside the measured peaks (MiB)."""
    mib = lambda b: "-" if b is None else f"{b / MIB:,.1f}"  # noqa: E731
    return [[ph, mib(x["predicted"]), mib(x["allocated"]), f"{x['ratio']:.3f}", mib(x["reserved"]),
             mib(x["device_used"])] for ph, x in res["phases"].items()]


def main(argv=None) -> int:
    parser = Parser(prog=PROG, description="One step and one evaluation call of a recipe: the planner's peak of "
                                           "each phase beside the measured one, under a --gpu-gb cap.")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu", help="cuda[:N] | cpu")
    parser.add_argument("--output", default=None, help="write the result as JSON here")
    add_dataclass_args(parser, PlanConfig)
    try:
        args = parser.parse_args(argv)
    except SystemExit as e:
        return int(e.code or 0)
    try:
        res = measure_phases(PlanConfig(**overrides(args, PlanConfig)), args.device)
    except (ValueError, OSError) as e:
        return fail(PROG, e)
    cpu = "" if args.device.startswith("cuda") else " (CPU: above the weights)"
    print(f"{res['preset']}: {res['model']}, {res['prompts']} prompt(s), n={res['n']} -> m={res['m']}, evaluation "
          f"{res['eval_batch']} questions, cap {res['cap_gib']:g} GiB, {res['device']}: {res['verdict']}")
    print(format_table(rows_phases(res), ("phase", f"planner MiB{cpu}", "allocated MiB", "allocated / planner",
                                          "reserved MiB", "device-used MiB")))
    if args.output:
        Path(args.output).parent.mkdir(parents=True, exist_ok=True)
        Path(args.output).write_text(json.dumps(res, indent=1, default=float))
    return 0 if res["verdict"] != "FAIL" else 1


if __name__ == "__main__":
    sys.exit(main())
