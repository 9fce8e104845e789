"""Chunked against full-vocabulary log-probs: `python scripts/logprob_memory.py [--quick]`.

grpo.token_logprobs gathers each completion token's log-prob chunk by chunk (logsumexp over at most
`--logprob-chunk` tokens x vocab at a time, recomputed in backward); grpo.naive_token_logprobs materialises the
(batch x length x vocab) logits and their log-softmax for backward. This script runs both, forward + backward on
one batch of rollouts, without and with gradient checkpointing, and prints their peak memory (memory.MemoryMeter)
and the largest difference between the two. Without checkpointing the backbone's activations dominate a small
model's peak; with it (the paper recipe) the logits do. It takes the flags of `python -m minipods.bench`
(--model, --dtype, --threads, --n, --max-new-tokens, --logprob-batch, --logprob-chunk; --quick).
"""

from __future__ import annotations

import torch

from minipods.measure.common import fmt_mb, fmt_x, ratio, sync
from minipods.measure.config import BenchConfig, Context, fixed_rollouts
from minipods.measure.memory import MemoryMeter

PROG = "python scripts/logprob_memory.py"


def part_logprob(ctx: Context, cfg: BenchConfig) -> dict:
    """Chunked vs naive log-probs, forward+backward on one batch, without and with gradient checkpointing
    (the paper's: it leaves mostly the head's (tokens x vocab) logits, which chunking bounds)."""
    from minipods.grpo import naive_token_logprobs, token_logprobs
    from minipods.model import base_model_of
    ro = fixed_rollouts(ctx, cfg)
    b = ro.select(list(range(min(cfg.logprob_batch, len(ro)))))
    model, base, args = ctx.model, base_model_of(ctx.model), (b.prompt_ids, b.prompt_mask, b.completion_ids,
                                                              b.completion_mask)

    def run(fn, **kw):
        model.zero_grad(set_to_none=True)
        with MemoryMeter(ctx.device) as mm:
            logp = fn(model, *args, **kw)
            (-(logp.sum()) / max(int(b.completion_mask.sum()), 1)).backward()
            sync(ctx.device)
        model.zero_grad(set_to_none=True)
        return logp.detach().float().cpu(), {"peak_mb": mm.delta_mb}

    model.train()
    with torch.no_grad():  # warm-up
        token_logprobs(model, *[a[:1] for a in args], chunk_tokens=cfg.logprob_chunk)
    runs, mask = {}, b.completion_mask.bool()
    for name, ckpt in (("plain", False), ("grad_ckpt", True)):
        if ckpt:
            base.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
        try:
            lp_c, chunked = run(token_logprobs, chunk_tokens=cfg.logprob_chunk)
            lp_n, naive = run(naive_token_logprobs)
        finally:
            if ckpt:
                base.gradient_checkpointing_disable()
        runs[name] = {"chunked": chunked, "naive": naive, "ratio": ratio(naive["peak_mb"], chunked["peak_mb"]),
                      "max_abs_diff": float((lp_c - lp_n)[mask].abs().max()) if mask.any() else 0.0}
    return {"batch_size": len(b), "seq_len": b.prompt_ids.shape[1] + b.completion_ids.shape[1],
            "completion_tokens": int(b.completion_mask.sum()), "vocab": base.get_output_embeddings().weight.shape[0],
            "chunk_tokens": cfg.logprob_chunk, "runs": runs, "ratio": runs["plain"]["ratio"],
            "ratio_grad_ckpt": runs["grad_ckpt"]["ratio"], "max_abs_diff": max(r["max_abs_diff"] for r in runs.values())}


def rows_logprob(r: dict) -> list[list[str]]:
    what = f"B={r['batch_size']}, L={r['seq_len']}, V={r['vocab']}, fwd+bwd"
    rows = []
    for name, label in (("plain", "no ckpt"), ("grad_ckpt", "grad ckpt")):
        x = r["runs"][name]
        c, n = x["chunked"], x["naive"]
        rows += [["logprob", f"{label}: chunked gather/logsumexp ({r['chunk_tokens']} tok/chunk), {what}",
                  f"peak +{fmt_mb(c['peak_mb'])}"],
                 ["logprob", f"{label}: naive full-vocab log_softmax, {what}", f"peak +{fmt_mb(n['peak_mb'])}"],
                 ["logprob", f"{label}: naive / chunked peak memory", fmt_x(x["ratio"])]]
    rows.append(["logprob", "max abs diff, chunked vs naive log-probs", f"{r['max_abs_diff']:.2e}"])
    return rows


def main(argv=None) -> int:
    """The bench's flags; the table of rows_logprob on stdout, the result as JSON in --output."""
    import json
    import sys
    from pathlib import Path

    from minipods.cli import fail
    from minipods.measure.bench import build_parser, config_from_args, model_context, validate
    from minipods.measure.common import format_table
    from minipods.model import default_device

    parser = build_parser(PROG)
    parser.description = __doc__.split("\n\n")[0]  # the bench's flags, this script's job (--parts is not used)
    args = parser.parse_args(argv)
    cfg = config_from_args(args)
    try:
        validate(cfg, None)
    except ValueError as e:
        return fail(PROG, e)
    if cfg.threads:
        torch.set_num_threads(cfg.threads)
    ctx = model_context(cfg, default_device() if cfg.device == "auto" else cfg.device, log=lambda s: print(s, file=sys.stderr))
    r = part_logprob(ctx, cfg)
    print(format_table(rows_logprob(r)))
    Path(args.output).write_text(json.dumps(r, indent=1, default=float))
    print(f"\nwrote {args.output}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
