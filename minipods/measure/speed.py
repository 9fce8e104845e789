"""Speed of the two PODS phases against their plain versions, and this machine's limits.

Paper (Section 3): PODS assumes inference is cheap next to the update, true only if the rollout code
runs near what the hardware allows. The second half of the bench's rollout and update parts, at the
--small shape: fast vs plain (HF `generate`) rollouts with the decode step against its roofline limit,
and grpo_update's log-prob passes against each other. Results: docs/performance.md."""

from __future__ import annotations

import time

import torch

from minipods.fast.inference import PackedLinear, folded_copy
from minipods.measure.common import best_seconds, fmt_s, fmt_x
from minipods.measure.footprint import kv_shape
from minipods.model import base_model_of


def machine_limits(size: int = 1024, mem_mb: int = 256, device: str = "cpu") -> dict:
    """Matmul TFLOP/s (size x size, bf16 and fp32) and memory read GB/s (sum over mem_mb, beyond the caches)."""
    out = {}
    for name, dt in (("bf16", torch.bfloat16), ("fp32", torch.float32)):
        a, b = torch.randn(size, size, device=device).to(dt), torch.randn(size, size, device=device).to(dt)
        # F.linear (x @ W.T, the layout every nn.Linear uses): for bf16 on CPUs without native
        # bf16 it reaches oneDNN's converting kernel, far faster than a plain `a @ b` there
        sec = best_seconds(lambda: torch.nn.functional.linear(a, b), device=device)
        out[f"{name}_tflops"] = 2 * size ** 3 / sec / 1e12
    x = torch.ones(mem_mb * 2 ** 20 // 4, device=device)
    out["mem_gbs"] = x.numel() * 4 / best_seconds(lambda: x.sum(), min_time=0.2, device=device) / 1e9
    out["threads"] = torch.get_num_threads()
    return out


def decode_step_cost(n_weights: int, weight_bytes: int, batch: int, layers: int, heads: int, kv_heads: int,
                     head_dim: int, context: float, act_bytes: int) -> tuple[float, float]:
    """(bytes read, FLOPs) of one decode step: `batch` rows each add one token after `context` cached ones.
    Weights and KV cache (kv_heads keys and values per layer, act_bytes each) are read once; 2 FLOPs per
    weight per row, and attention's q.k and p.v: 4 * heads * head_dim per cached token per layer per row."""
    kv_bytes = batch * layers * 2 * kv_heads * head_dim * context * act_bytes
    flops = 2 * batch * n_weights + 4 * batch * layers * heads * head_dim * context
    return weight_bytes + kv_bytes, flops


def roofline(bytes_read: float, flops: float, mem_gbs: float, tflops: float) -> dict:
    """A step's limit: the larger of its bytes at the memory bandwidth and its FLOPs at the matmul rate."""
    t_mem, t_flop = bytes_read / (mem_gbs * 1e9), flops / (tflops * 1e12)
    return {"memory_s": t_mem, "compute_s": t_flop, "limit_s": max(t_mem, t_flop),
            "bound": "memory" if t_mem >= t_flop else "compute"}


def decode_roofline(model, batch: int, context: float, limits: dict) -> dict:
    """roofline() of one decode step of `model` (the network that decodes) for `batch` rows at `context`
    cached tokens: blocks' matrices and the LM head as stored, no LoRA factors; FLOPs at the head's dtype."""
    cfg, base = model.config, base_model_of(model)
    blocks = base.get_decoder().layers
    mats = [t for n, t in list(blocks.named_parameters()) + list(blocks.named_buffers())
            if t.dim() == 2 and "lora_" not in n]
    packed = sum(m.in_features * m.out_features for m in blocks.modules() if isinstance(m, PackedLinear))  # float32
    head = base.get_output_embeddings().weight
    n_w = sum(t.numel() for t in mats) + packed + head.numel()
    w_bytes = sum(t.numel() * t.element_size() for t in mats) + 4 * packed + head.numel() * head.element_size()
    layers, kv_heads, head_dim = kv_shape(cfg)
    bytes_read, flops = decode_step_cost(n_w, w_bytes, batch, layers, cfg.num_attention_heads, kv_heads, head_dim,
                                         context, base.get_input_embeddings().weight.element_size())
    dtype = "fp32" if head.dtype == torch.float32 else "bf16"
    return {"batch": batch, "context": context, "weight_mb": w_bytes / 2 ** 20, "kv_mb": (bytes_read - w_bytes) / 2 ** 20,
            "gflop": flops / 1e9, "matmul_dtype": dtype,
            **roofline(bytes_read, flops, limits["mem_gbs"], limits[f"{dtype}_tflops"])}


def _prompts(ctx, cfg) -> list[str]:
    from minipods.data import build_prompt, synthetic_problems
    return [build_prompt(ctx.tok, it["question"]) for it in synthetic_problems(cfg.speed_prompts, seed=cfg.seed)]


def part_rollout_speed(ctx, cfg) -> dict:
    """Fast generate_rollouts vs plain (minipods.rollouts) at the speed_* shape, alternating speed_rounds
    times after a warm-up; tokens/s: each side's total tokens over its total seconds."""
    from minipods.fast.rollouts import generate_rollouts as fast_generate
    from minipods.rollouts import generate_rollouts as plain_generate
    model, tok, prompts, n, T = ctx.model, ctx.tok, _prompts(ctx, cfg), cfg.speed_n, cfg.speed_temperature
    fast_generate(model, tok, prompts[:1], 2, max_new_tokens=4, temperature=T)  # warm-up
    plain_generate(model, tok, prompts[:1], 2, max_new_tokens=4, temperature=T, batch_size=2)
    fast, plain = [], []
    for r in range(cfg.speed_rounds):
        for runs, generate in ((fast, fast_generate), (plain, plain_generate)):
            torch.manual_seed(cfg.seed + r)
            ro = generate(model, tok, prompts, n, max_new_tokens=cfg.speed_max_new_tokens, temperature=T,
                          batch_size=len(prompts) * n)
            runs.append({"seconds": ro.seconds, "tokens": ro.num_tokens, "meta": ro.meta})
    meta = [x["meta"] for x in fast]
    def total(runs):
        s, t = sum(x["seconds"] for x in runs), sum(x["tokens"] for x in runs)
        return {"seconds_per_call": s / len(runs), "tokens": t, "tokens_per_s": t / s}
    f, p, limits = total(fast), total(plain), machine_limits(device=str(next(model.parameters()).device))
    steps = sum(m["steps"] for m in meta)
    step_s = sum(m["decode_s"] for m in meta) / steps  # achieved seconds per decode step (fast path)
    P = len(tok(prompts[0], add_special_tokens=False).input_ids)
    decoder = folded_copy(model) if meta[0]["folded"] else model  # the network that decoded
    roof = decode_roofline(decoder, len(prompts) * n, P + steps / len(meta) / 2, limits)
    return {"prompts": len(prompts), "n": n, "max_new_tokens": cfg.speed_max_new_tokens, "temperature": T,
            "rounds": cfg.speed_rounds, "threads": torch.get_num_threads(), "fast": f, "plain": p,
            "ratio": f["tokens_per_s"] / p["tokens_per_s"],
            "fast_parts_s": {k: sum(m[k] for m in meta) / len(meta) for k in ("fold_s", "prefill_s", "decode_s")},
            "levers": {k: meta[0][k] for k in ("folded", "shared_prefill", "packed", "fused_siblings", "grown_in_place")},
            "limits": limits, "roofline": roof, "decode_step_s": step_s, "x_limit": step_s / roof["limit_s"]}


def rows_rollout_speed(r: dict) -> list[list[str]]:
    f, p, lim, roof, parts = r["fast"], r["plain"], r["limits"], r["roofline"], r["fast_parts_s"]
    shape = f"{r['prompts']} prompts x n={r['n']}, {r['max_new_tokens']} new tok, T={r['temperature']}"
    return [
        ["rollout", f"plain generate ({shape})", f"{p['tokens_per_s']:.1f} tok/s, {fmt_s(p['seconds_per_call'])}/call"],
        ["rollout", "generate_rollouts (all levers: " + ", ".join(k for k, on in r["levers"].items() if on) + ")",
         f"{f['tokens_per_s']:.1f} tok/s, {fmt_s(f['seconds_per_call'])}/call (fold {fmt_s(parts['fold_s'])}, "
         f"prefill {fmt_s(parts['prefill_s'])}, decode {fmt_s(parts['decode_s'])})"],
        ["rollout", "generate_rollouts / plain tokens/s", fmt_x(r["ratio"])],
        ["rollout", f"machine ({lim['threads']} thread(s))",
         f"bf16 {lim['bf16_tflops']:.4f} TFLOP/s, fp32 {lim['fp32_tflops']:.3f} TFLOP/s, memory {lim['mem_gbs']:.1f} GB/s"],
        ["rollout", f"decode step limit (batch {roof['batch']}, context {roof['context']:.0f}, {roof['matmul_dtype']} matmuls)",
         f"{fmt_s(roof['limit_s'])} ({roof['bound']}-bound: {roof['weight_mb'] + roof['kv_mb']:.0f} MB read "
         f"= {fmt_s(roof['memory_s'])}, {roof['gflop']:.1f} GFLOP = {fmt_s(roof['compute_s'])})"],
        ["rollout", "achieved decode step", f"{fmt_s(r['decode_step_s'])} = {r['x_limit']:.1f} x the limit"]]


def part_update_speed(ctx, cfg) -> dict:
    """Seconds per update on the first speed_m of each prompt's speed_n rollouts with each log-prob pass:
    shared-prompt ("fast"), per-row ("unshared"), full-vocabulary log_softmax ("plain"); SGD with lr 0."""
    from minipods.fast.rollouts import generate_rollouts
    from minipods.fast.update import shared_logprobs
    from minipods.grpo import grpo_update, naive_token_logprobs, rollout_logprobs
    model, prompts, n, rounds, mbs = (ctx.model, _prompts(ctx, cfg), cfg.speed_n, cfg.speed_update_rounds,
                                      cfg.micro_batch_size)
    torch.manual_seed(cfg.seed)
    ro = generate_rollouts(model, ctx.tok, prompts, n, max_new_tokens=cfg.speed_max_new_tokens,
                           temperature=cfg.speed_temperature)
    batch = ro.select([g * n + i for g in range(len(prompts)) for i in range(min(cfg.speed_m, n))])
    adv = torch.randn(len(batch), generator=torch.Generator().manual_seed(0))
    opt = torch.optim.SGD([p for p in model.parameters() if p.requires_grad], lr=0.0)
    passes = {"fast": shared_logprobs,  # plain: each row in full, a full-vocabulary log_softmax
              "plain": lambda model, mb, temperature, chunk_tokens: naive_token_logprobs(
                  model, mb.prompt_ids, mb.prompt_mask, mb.completion_ids, mb.completion_mask, temperature),
              "unshared": rollout_logprobs}
    small = batch.select((batch.group == batch.group[0]).nonzero()[:2, 0])  # warm-up: 2 rows of one prompt
    secs = {k: 0.0 for k in passes}
    for r in range(rounds + 1):
        for k, fn in passes.items():
            t0 = time.perf_counter()
            grpo_update(model, opt, batch if r else small, adv if r else adv[:2], micro_batch_size=mbs,
                        temperature=cfg.speed_temperature, logprob_fn=fn)
            secs[k] += (time.perf_counter() - t0) / rounds if r else 0.0
    return {"rows": len(batch), "groups": int(batch.group.unique().numel()), "micro_batch_size": mbs,
            "prompt_tokens": int(batch.prompt_mask.sum(1).float().mean()),
            "completion_tokens": int(batch.completion_mask.sum()), "rounds": rounds, "threads": torch.get_num_threads(),
            "seconds": secs, "ratio_plain": secs["plain"] / secs["fast"], "ratio_unshared": secs["unshared"] / secs["fast"]}


def rows_update_speed(r: dict) -> list[list[str]]:
    s, shape = r["seconds"], f"{r['rows']} rows ({r['groups']} prompts), micro-batch {r['micro_batch_size']}"
    return [["update", f"plain GRPO step, full log_softmax ({shape})", f"{fmt_s(s['plain'])}/update"],
            ["update", "grpo_update, every row in full (the plain pass)", f"{fmt_s(s['unshared'])}/update"],
            ["update", "grpo_update (each prompt once per micro-batch)", f"{fmt_s(s['fast'])}/update"],
            ["update", "plain / grpo_update time", fmt_x(r["ratio_plain"])],
            ["update", "plain pass / shared-prompt pass time", fmt_x(r["ratio_unshared"])]]
