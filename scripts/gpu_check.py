"""The checks of scripts/gpu_check.sh that are not library code, one JSON verdict each:
`python scripts/gpu_check.py --check learn|fp16|greedy --model TWIN`. (Its `paper` and `consumer`
stages are `python scripts/gpu_step.py`: the planner against one capped step.)

  learn   the learning direction: fixed rollouts, advantage +1 on half of each group's rows and -1 on
          the other half, three updates: the mean log-prob must rise for the +1 rows, fall for the -1
          rows, with no update skipped (`learning_direction`, tested on the tiny model on a CPU).
  fp16    one update of a 4-bit policy computing in float16 with the dynamic loss scale
          (grpo.loss_scaler): nothing skipped, a finite gradient, the adapter moved.
  greedy  the fast and the plain engine decode one prompt greedily to the same tokens (4-bit twin; its
          final norm scaled up so that greedy choices are not near-ties of random logits).
Models are architecture twins (random weights): mechanics, never accuracy.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path

import torch

from minipods.cli import Parser, add_dataclass_args, fail, overrides, setting
from minipods.measure.gpu import load_recipe, recipe_batch, twin_prompts
from minipods.model import base_model_of, cuda_device

PROG = "python scripts/gpu_check.py"
CHECKS = ("learn", "fp16", "greedy")


@dataclass
class CheckConfig:
    """Settings of one check (each a flag)."""
    check: str = setting("learn", "learn | fp16 | greedy")
    model: str = setting("random:Qwen/Qwen2.5-1.5B-Instruct", "the twin")
    lr: float = setting(1e-4, "learn: learning rate of the three updates (the direction, not the recipe's step size)")
    tokens: int = setting(128, "learn, fp16: prompt and completion tokens of each fixed row (each)")
    device: str = setting("auto", "cuda | cuda:N | cpu | auto")
    output: str = setting("", "write the JSON verdict here too")


def mean_row_logprobs(model, batch) -> torch.Tensor:
    """(B,) each row's mean completion-token log-prob under the policy now."""
    from minipods.grpo import rollout_logprobs

    with torch.no_grad():
        lp = rollout_logprobs(model, batch)
    return lp.sum(1) / batch.completion_mask.sum(1).clamp(min=1).to(lp.device)


def learning_direction(model, optimizer, batch, updates: int = 3, micro_batch_size: int = 4, scaler=None) -> dict:
    """Three (`updates`) GRPO updates on fixed rollouts with advantage +1 on the first half of each
    group's rows and -1 on the rest (scaler: fp16's loss scale, grpo.loss_scaler). PASS when the +1
    rows' mean log-prob rose, the -1 rows' fell, and no update was skipped."""
    from minipods.grpo import grpo_update

    counts = torch.unique_consecutive(batch.group, return_counts=True)[1]  # rows are group-major
    pos = torch.cat([torch.arange(c) < c // 2 for c in counts.tolist()])  # (B,) the +1 rows
    adv = torch.where(pos, 1.0, -1.0)
    model.train()  # as the update runs (no dropout: LoRA's is 0); 4-bit on a CPU must not repack in eval mode
    before = mean_row_logprobs(model, batch)
    skipped = sum(grpo_update(model, optimizer, batch, adv, micro_batch_size=micro_batch_size,
                              scaler=scaler)["skipped"] for _ in range(updates))
    change = (mean_row_logprobs(model, batch) - before).float().cpu()
    up, down = float(change[pos].mean()), float(change[~pos].mean())
    return {"check": "learn", "positive_change": up, "negative_change": down, "skipped": skipped,
            "verdict": "PASS" if up > 0 > down and skipped == 0 else "FAIL"}


def _twin_and_batch(cc: CheckConfig, device: str, dtype: str):
    """A 4-bit twin as training loads it (LoRA r=16), its optimizer at --lr, its loss scaler (fp16 only,
    else None) and 2 x 4 fixed rows."""
    from minipods.grpo import loss_scaler

    model, tok, opt = load_recipe(cc.model, "4bit", 16, 16, False, "auto", device, dtype)
    for g in opt.param_groups:
        g["lr"] = cc.lr
    batch, _ = recipe_batch(model, 2, 4, 2 * cc.tokens, prompt_tokens=cc.tokens)
    return model, tok, opt, loss_scaler(model), batch


def fp16_update(cc: CheckConfig, device: str) -> dict:
    """The `fp16` check (module docstring)."""
    from minipods.grpo import grpo_update

    model, _, opt, scaler, batch = _twin_and_batch(cc, device, "float16")
    before = [p.detach().clone() for p in model.parameters() if p.requires_grad]
    out = grpo_update(model, opt, batch, torch.tensor([1.0, -1, 1, -1, 1, -1, 1, -1]), micro_batch_size=4,
                      scaler=scaler)
    moved = max(float((p.detach() - b).abs().max()) for p, b in zip((p for p in model.parameters() if p.requires_grad),
                                                                    before))
    ok = scaler is not None and out["skipped"] == 0 and out["grad_norm"] > 0 and moved > 0
    return {"check": "fp16", "loss_scale": out.get("loss_scale"), "skipped": out["skipped"],
            "grad_norm": out["grad_norm"], "adapter_max_change": moved, "verdict": "PASS" if ok else "FAIL"}


def greedy_equal(cc: CheckConfig, device: str) -> dict:
    """The `greedy` check (module docstring)."""
    from minipods.fast.rollouts import generate_rollouts as fast
    from minipods.rollouts import generate_rollouts as plain

    model, tok, _, _, _ = _twin_and_batch(cc, device, "auto")
    with torch.no_grad():
        base_model_of(model).get_decoder().norm.weight.mul_(30.0)
    prompt = twin_prompts(1, 48, 1)
    a, b = (gen(model, tok, prompt, 1, max_new_tokens=32, do_sample=False).completion_ids[0] for gen in (plain, fast))
    same = a.shape == b.shape and bool((a == b).all())
    diff = (a[:min(len(a), len(b))] != b[:min(len(a), len(b))]).nonzero()
    return {"check": "greedy", "tokens": len(a), "equal": same,
            "first_difference": int(diff[0]) if len(diff) else None, "verdict": "PASS" if same else "FAIL"}


def main(argv=None) -> int:
    parser = Parser(prog=PROG, description="One GPU check, as a JSON verdict.")
    add_dataclass_args(parser, CheckConfig)
    try:
        cc = CheckConfig(**overrides(parser.parse_args(argv), CheckConfig))
        if cc.check not in CHECKS:
            raise ValueError(f"--check must be one of {', '.join(CHECKS)}, got {cc.check!r}")
    except SystemExit as e:
        return int(e.code or 0)
    except ValueError as e:
        return fail(PROG, e)
    device = ("cuda" if torch.cuda.is_available() else "cpu") if cc.device == "auto" else cc.device
    if cc.check == "learn":
        model, _, opt, scaler, batch = _twin_and_batch(cc, device, "auto")
        res = learning_direction(model, opt, batch, scaler=scaler)
    else:
        res = {"fp16": fp16_update, "greedy": greedy_equal}[cc.check](cc, device)
    res["device"] = torch.cuda.get_device_name(cuda_device(device)) if device.startswith("cuda") else "cpu"
    text = json.dumps(res, default=float)
    print(text)
    if cc.output:
        Path(cc.output).parent.mkdir(parents=True, exist_ok=True)
        Path(cc.output).write_text(text)
    return 0 if res["verdict"] != "FAIL" else 1


if __name__ == "__main__":
    sys.exit(main())
