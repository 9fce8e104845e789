"""The planner against a measurement: `python -m minipods.measure.plan_check --preset paper`.

minipods.measure.plan predicts each phase's peak from counted and CPU-measured terms; this runs the
same recipe once on the device and measures it: the architecture twin of the recipe's model, loaded as
training loads it, one warm-up update (so the optimizer state exists, as from the second step on),
then the inference phase (the fast engine: prompts_per_step prompts of exactly max_prompt_tokens
tokens, n rollouts each, gen_batch_size per call; a twin's rollouts run to max_new_tokens, the
planner's worst case) and the update phase (prompts_per_step x m kept rows of max_prompt_tokens +
max_new_tokens tokens, micro-batches, the optimizer step). On CUDA each phase's measured peak is
max_memory_allocated (weights included), beside the planner's peak. On a CPU (tests) it is the
allocator's peak above what was held before (memory.peak_allocated_bytes), beside the planner's peak
less the weights, adapter and optimizer state. scripts/gpu_check.sh runs it for the paper and
consumer presets.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import torch

from minipods.cli import Parser, add_dataclass_args, fail, overrides
from minipods.measure.common import format_table
from minipods.measure.memory import peak_allocated_bytes
from minipods.measure.plan import PlanConfig, plan

PROG = "python -m minipods.measure.plan_check"
MIB = 2 ** 20


def _meter(device: str, fn) -> dict:
    """{"base": bytes held at the start (CUDA), "peak": the peak (CUDA: absolute; CPU: above the start)}."""
    if device.startswith("cuda"):
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        base = torch.cuda.memory_allocated()
        fn()
        torch.cuda.synchronize()
        return {"base": base, "peak": torch.cuda.max_memory_allocated()}
    return {"base": None, "peak": peak_allocated_bytes(fn)}


def _prompts(count: int, tokens: int, seed: int) -> list[str]:
    """`count` prompts of exactly `tokens` tokens for a twin's byte-level tokenizer (one token per byte)."""
    g = torch.Generator().manual_seed(seed)
    return ["".join(chr(97 + int(c)) for c in torch.randint(0, 26, (tokens,), generator=g)) for _ in range(count)]


def _load(r, device: str):
    from minipods.model import load_policy
    from minipods.train import make_config, make_optimizer

    name = r.model if r.model.startswith("random:") else "random:" + r.model
    torch.manual_seed(0)
    model, tok = load_policy(name, quantize=r.quantize, lora_r=r.lora_r, lora_alpha=r.lora_r, dtype="bfloat16",
                             device=device, gradient_checkpointing=r.ckpt)
    return model, tok, make_optimizer(model, make_config(optimizer=r.optimizer), device)


def measure_phases(pc: PlanConfig, device: str) -> dict:
    """Predicted and measured peaks of both phases of pc's recipe (see the module docstring)."""
    from minipods.fast.rollouts import generate_rollouts
    from minipods.fast.update import shared_logprobs
    from minipods.grpo import grpo_update
    from minipods.measure.shallow import update_batch
    from minipods.rollouts import Rollouts

    p = plan(pc)
    r = p["recipe"]
    model, tok, opt = _load(r, device)
    rows, vocab = r.prompts * r.m, model.get_output_embeddings().weight.shape[0]
    ids = update_batch(rows, r.prompt_tokens + r.new_tokens, vocab, prompt_tokens=r.prompt_tokens)
    batch = Rollouts(*ids, torch.arange(r.prompts).repeat_interleave(r.m), [""] * rows, r.m)
    adv = torch.randn(rows, generator=torch.Generator().manual_seed(0))
    prompts = _prompts(r.prompts, r.prompt_tokens, 0)

    def update():
        grpo_update(model, opt, batch, adv, micro_batch_size=r.micro_batch, chunk_tokens=r.chunk,
                    max_grad_norm=0.1, logprob_fn=shared_logprobs)

    def generate():
        ro = generate_rollouts(model, tok, prompts, r.n, max_new_tokens=r.new_tokens, batch_size=r.gen_batch,
                               max_prompt_tokens=r.prompt_tokens, fold_adapter=False)
        out["shape"] = [int(ro.prompt_ids.shape[1]), int(ro.meta["steps"])]

    out = {}
    update()  # warm-up: the optimizer state exists from the first step on
    generate_rollouts(model, tok, prompts[:1], 1, max_new_tokens=2, fold_adapter=False)  # warm-up
    measured = {"generation": _meter(device, generate), "update": _meter(device, update)}
    static = sum(b for _, b, _ in p["generation"]["parts"][:4])  # weights, LoRA, optimizer state
    return {"device": device, "gpu": torch.cuda.get_device_name() if device.startswith("cuda") else "cpu",
            "model": r.model, "preset": pc.preset, "prompts": r.prompts, "n": r.n, "m": r.m,
            "generated_shape": out["shape"], "static_predicted": static,
            "phases": {ph: {"predicted": p[ph]["peak"], **measured[ph]} for ph in ("generation", "update")}}


def rows_of(res: dict) -> list[list[str]]:
    """Table rows: predicted beside measured, per phase (CPU: both above the weights)."""
    cuda = res["device"].startswith("cuda")
    out = []
    for ph, x in res["phases"].items():
        pred = x["predicted"] - (0 if cuda else res["static_predicted"])
        out.append([f"{res['preset']}: {res['model']} ({res['prompts']} prompt(s), n={res['n']} -> m={res['m']})", ph,
                    f"{pred / MIB:,.1f}", f"{x['peak'] / MIB:,.1f}", f"{x['peak'] / pred:.3f}"])
    if cuda:
        base = res["phases"]["update"]["base"]
        out.append([res["preset"], "weights + LoRA + optimizer state", f"{res['static_predicted'] / MIB:,.1f}",
                    f"{base / MIB:,.1f}", f"{base / res['static_predicted']:.3f}"])
    return out


def main(argv=None) -> int:
    parser = Parser(prog=PROG, description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu", help="cuda | cpu")
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
    what = "CUDA peak allocated" if args.device.startswith("cuda") else "CPU allocator peak above the weights"
    print(format_table(rows_of(res), ("recipe", "phase", "planner MiB", f"measured MiB ({what})", "measured / planner")))
    if args.output:
        Path(args.output).parent.mkdir(parents=True, exist_ok=True)
        Path(args.output).write_text(json.dumps(res, indent=1, default=float))
    return 0


if __name__ == "__main__":
    sys.exit(main())
