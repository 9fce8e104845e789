"""The paper recipe as training loads it, fed random ids: what scripts/gpu_step.py (one capped step of
the recipe on its twin beside the planner), scripts/gpu_check.py and scripts/measure_terms.py share.

Paper (single GPU): Qwen2.5-3B-Instruct in NF4, LoRA r=64, gradient checkpointing, 8-bit AdamW, 512 + 512
tokens, m=16 of n=64, on the architecture twin (real shapes, random weights, offline) fed random ids: an
update's cost does not depend on the weights."""

from __future__ import annotations

import torch


def load_recipe(name: str, quantize: str | None, lora_r: int, lora_alpha: int, ckpt: bool, optimizer: str,
                device: str, dtype: str = "auto", seed: int = 0):
    """(policy, tokenizer, optimizer) as training loads them (optimizer: auto | adamw | adamw8bit)."""
    from minipods.model import load_policy
    from minipods.train import make_config, make_optimizer
    torch.manual_seed(seed)
    model, tok = load_policy(name, quantize=quantize, lora_r=lora_r, lora_alpha=lora_alpha, dtype=dtype,
                             device=device, gradient_checkpointing=ckpt)
    return model, tok, make_optimizer(model, make_config(optimizer=optimizer), device)


def recipe_batch(model, prompts: int, m: int, tokens: int, prompt_tokens: int | None = None, seed: int = 0):
    """(Rollouts, advantages): m rows per prompt of `tokens` random ids, `prompt_tokens` (default: half) of
    them prompt, padded as rollouts are (one prompt left-padded, one completion cut)."""
    from minipods.rollouts import Rollouts
    rows, vocab, g = prompts * m, model.get_output_embeddings().weight.shape[0], torch.Generator().manual_seed(seed)
    P = tokens // 2 if prompt_tokens is None else prompt_tokens
    C = tokens - P
    pm, cm = torch.ones(rows, P, dtype=torch.long), torch.ones(rows, C, dtype=torch.long)
    pm[0, :P // 4] = 0
    cm[-1, C - C // 4:] = 0
    ids = torch.randint(3, vocab, (rows, P), generator=g), pm, torch.randint(3, vocab, (rows, C), generator=g), cm
    batch = Rollouts(*ids, torch.arange(prompts).repeat_interleave(m), [""] * rows, m)
    return batch, torch.randn(rows, generator=torch.Generator().manual_seed(seed))


def twin_prompts(count: int, tokens: int, seed: int) -> list[str]:
    """`count` prompts of exactly `tokens` tokens for a twin's byte-level tokenizer (one token per byte)."""
    g = torch.Generator().manual_seed(seed)
    return ["".join(chr(97 + int(c)) for c in torch.randint(0, 26, (tokens,), generator=g)) for _ in range(count)]
