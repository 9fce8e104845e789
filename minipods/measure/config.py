"""What every part of `python -m minipods.bench` is given: the settings (BenchConfig, QUICK) and the shared Context."""

from __future__ import annotations

from dataclasses import dataclass, fields

import torch

from minipods.cli import setting

DTYPES = ("auto", "float32", "bfloat16", "float16")


@dataclass
class BenchConfig:
    """What every part measures (speed_*: speed.py); `--quick` lays QUICK over these defaults, flags over both."""
    model: str = setting("smollm2-135m-instruct", "model of the in-process parts and beside TRL (offline default)")
    dtype: str = setting("auto", "auto (bf16 on CUDA, fp32 on CPU) | float32 | bfloat16 | float16")
    threads: int = setting(0, "torch threads (0: torch's default; --quick: 1)")
    device: str = setting("auto", "auto | cpu | cuda")
    quick: bool = setting(False, "small sizes for a shared CPU (a few minutes), 1 thread")
    seed: int = setting(0, "seed of the prompts, sampling and LoRA init")
    lora_r: int = setting(64, "LoRA rank (in-process parts, beside TRL)")
    lora_alpha: int = setting(64, "LoRA alpha")
    n: int = setting(16, "rollouts per prompt (the fixed set the update and logprob parts reuse)")
    max_new_tokens: int = setting(128, "rollout length in tokens (quick: 64)")
    m_values: list[int] = setting([2, 4, 8, 16], "kept-rollout counts for the update part (each <= n)")
    micro_batch_size: int = setting(4, "sequences per forward/backward (update, trl)")
    repeats: int = setting(3, "timed repeats per update point: median time, max memory (quick: 1)")
    logprob_batch: int = setting(16, "sequences in scripts/logprob_memory.py (quick: 4)")
    logprob_chunk: int = setting(512, "tokens per chunk in scripts/logprob_memory.py; the update part uses the "
                                      "training default, 512 (quick: 64)")
    select_sizes: list[int] = setting([16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1_000_000],
                                      "n values for the select part")
    trl_prompts: int = setting(4, "prompts per step beside TRL (scripts/vs_trl.py; quick: 2)")
    trl_n: int = setting(8, "generations per prompt beside TRL (quick: 4)")
    trl_max_new_tokens: int = setting(128, "completion length beside TRL (quick: 32)")
    speed_prompts: int = setting(4, "distinct prompts in the fast-vs-plain rollout and update measurements (--small: 4)")
    speed_n: int = setting(8, "rollouts per prompt there (--small: 8)")
    speed_m: int = setting(4, "kept rollouts per prompt in the fast-vs-plain update (--small: 4)")
    speed_max_new_tokens: int = setting(64, "rollout length there (--small: 64; quick: 32)")
    speed_temperature: float = setting(0.7, "sampling temperature there (--small: 0.7)")
    speed_rounds: int = setting(2, "alternating fast/plain rollout rounds (quick: 1)")
    speed_update_rounds: int = setting(1, "alternating fast/plain/unshared update rounds")


# quick: the logprob batch (4 x 64 tokens) spans 4 chunks of 64, as the full run's 16 x 128 spans 4 of 512
# (and the paper's micro-batch, 4 x 512 completion tokens, 4 of 512)
QUICK = dict(max_new_tokens=64, repeats=1, logprob_batch=4, logprob_chunk=64,
             select_sizes=[16, 256, 4096, 65536, 1_000_000], trl_prompts=2, trl_n=4, trl_max_new_tokens=32,
             speed_max_new_tokens=32, speed_rounds=1)

POSITIVE = tuple(f.name for f in fields(BenchConfig)  # settings that must be >= 1
                 if f.type == "int" and f.name not in ("threads", "seed"))


@dataclass
class Context:
    """What the in-process parts share: model, tokenizer, device and one fixed set of rollouts."""
    model: object = None
    tok: object = None
    device: str = "cpu"
    prompt: str = ""
    rollouts: object = None
    update_points: list | None = None  # the update part's phases.update_points, once it ran


def fixed_rollouts(ctx: Context, cfg: BenchConfig):
    """The one set of n rollouts the update and logprob parts share (the rollout part's, if it ran)."""
    from minipods.fast.rollouts import generate_rollouts
    if ctx.rollouts is None:
        torch.manual_seed(cfg.seed)
        ctx.rollouts = generate_rollouts(ctx.model, ctx.tok, [ctx.prompt], cfg.n, max_new_tokens=cfg.max_new_tokens,
                                         batch_size=cfg.n)
    return ctx.rollouts
