"""Speed of the two PODS phases against their plain versions, and this machine's limits.

Paper (Section 3): PODS assumes the inference phase is cheap next to the update. That holds only
if the rollout code runs near what the hardware allows; these measurements say how near.

  rollout  generate_rollouts (shared prefill, inverse-CDF sampler, folded adapter) vs a plain
           `model.generate(do_sample=True)` on the n-times repeated prompts: real tokens/s of each
           and their ratio, measured alternately in one process (robust to a shared machine's
           load). Also this machine's matmul TFLOP/s (bf16, fp32) and memory GB/s (small
           microbenchmarks, ~seconds), the roofline time of one decode step at the measured shape
           (weights + KV cache read / GB/s vs FLOPs / TFLOP/s, the larger) and the achieved time
           per decode step as "N x the limit".
  update   grpo_update (each distinct prompt run once per micro-batch) vs a plain PyTorch GRPO
           step on the same rows (forward each [prompt | completion] row, full log_softmax, gather,
           backward), and vs grpo_update(share_prompts=False): seconds and ratios.

Each part returns a dict; rows_rollout_speed / rows_update_speed turn it into table rows
(part, measurement, result). `python -m minipods.bench_speed` runs both at the --small shape.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time

import torch

from minipods.model import folded_copy, generation_mode

SMALL = dict(prompts=4, n=8, m=4, max_new_tokens=96, temperature=0.7, micro_batch_size=4, lora_r=16,
             lora_alpha=32, dtype="bfloat16")  # the --small preset's rollout and update shape


def _fmt_s(s: float) -> str:
    return "n/a" if s is None or not math.isfinite(s) else f"{s:.2f} s" if s >= 1 else f"{s * 1e3:.1f} ms"


def _fmt_x(r: float) -> str:
    return "n/a" if r is None or not math.isfinite(r) else f"{r:.2f}x"


def _best(fn, min_time: float = 0.3, rounds: int = 3) -> float:
    """Best-of-`rounds` seconds per call, each round repeating fn for >= min_time."""
    fn()  # warm-up
    best = float("inf")
    for _ in range(rounds):
        k, t0 = 0, time.perf_counter()
        while True:
            fn()
            k += 1
            dt = time.perf_counter() - t0
            if dt >= min_time:
                break
        best = min(best, dt / k)
    return best


# ---------------------------------------------------------------- machine limits
def machine_limits(size: int = 1024, mem_mb: int = 256) -> dict:
    """Measured matmul TFLOP/s (square size x size, bf16 and fp32) and memory read GB/s
    (sum over a mem_mb buffer, far larger than the caches). Best of a few rounds."""
    out = {}
    for name, dt in (("bf16", torch.bfloat16), ("fp32", torch.float32)):
        a, b = torch.randn(size, size).to(dt), torch.randn(size, size).to(dt)
        # F.linear (x @ W.T, the layout every nn.Linear uses): for bf16 on CPUs without native
        # bf16 it reaches oneDNN's converting kernel, ~10x a plain `a @ b` there
        out[f"{name}_tflops"] = 2 * size ** 3 / _best(lambda: torch.nn.functional.linear(a, b)) / 1e12
    x = torch.ones(mem_mb * 2 ** 20 // 4)
    out["mem_gbs"] = x.numel() * 4 / _best(lambda: x.sum(), min_time=0.2) / 1e9
    out["threads"] = torch.get_num_threads()
    return out


def decode_roofline(model, batch: int, context: float, limits: dict) -> dict:
    """Lower bound on one decode step of `model` (the network that decodes: the folded copy where
    generate_rollouts used one) for `batch` rows at `context` cached tokens: max(bytes read / GB/s,
    FLOPs / TFLOP/s). Bytes: every matrix of the blocks and the LM head as stored (float32 in an
    upcast copy) plus the KV cache (in the embeddings' dtype); FLOPs: 2 per weight per row plus the
    attention's 4 * heads * head_dim * context per layer per row, at the TFLOP/s of the weights'
    dtype."""
    cfg = model.config
    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    mats = [t for n, t in list(base.get_decoder().layers.named_parameters()) + list(base.get_decoder().layers.named_buffers())
            if t.dim() == 2 and "lora_" not in n]
    head = base.get_output_embeddings().weight
    n_w = sum(t.numel() for t in mats) + head.numel()
    w_bytes = sum(t.numel() * t.element_size() for t in mats) + head.numel() * head.element_size()
    act_size = base.get_input_embeddings().weight.element_size()
    L, heads = cfg.num_hidden_layers, cfg.num_attention_heads
    kv_heads = getattr(cfg, "num_key_value_heads", heads) or heads
    head_dim = getattr(cfg, "head_dim", None) or cfg.hidden_size // heads
    kv_bytes = batch * L * 2 * kv_heads * head_dim * context * act_size
    flops = 2 * batch * n_w + 4 * batch * L * heads * head_dim * context
    dtype = "fp32" if head.dtype == torch.float32 else "bf16"
    t_mem, t_flop = (w_bytes + kv_bytes) / (limits["mem_gbs"] * 1e9), flops / (limits[f"{dtype}_tflops"] * 1e12)
    return {"batch": batch, "context": context, "weight_mb": w_bytes / 2 ** 20, "kv_mb": kv_bytes / 2 ** 20,
            "gflop": flops / 1e9, "matmul_dtype": dtype, "memory_s": t_mem, "compute_s": t_flop,
            "limit_s": max(t_mem, t_flop), "bound": "memory" if t_mem >= t_flop else "compute"}


# ---------------------------------------------------------------- rollout: fast vs plain generate
@torch.no_grad()
def plain_generate(model, tok, prompts: list[str], n: int, max_new_tokens: int, temperature: float,
                   top_p: float = 1.0) -> dict:
    """The baseline: HF `generate(do_sample=True)` on the n-times repeated prompts, one batch (what
    generate_rollouts did before issue 11). Returns seconds, real tokens, decode steps."""
    from minipods.rollouts import _eos_ids, completion_mask_from_ids

    device = next(model.parameters()).device
    eos = _eos_ids(model, tok)
    tok.padding_side = "left"
    enc = tok(prompts, add_special_tokens=False, padding=True, return_tensors="pt")
    ids, am = enc.input_ids.repeat_interleave(n, 0).to(device), enc.attention_mask.repeat_interleave(n, 0).to(device)
    t0 = time.perf_counter()
    with generation_mode(model):
        out = model.generate(input_ids=ids, attention_mask=am, max_new_tokens=max_new_tokens, do_sample=True,
                             temperature=temperature, top_p=top_p, top_k=None,
                             pad_token_id=tok.pad_token_id if tok.pad_token_id is not None else eos[0], eos_token_id=eos)
    seconds = time.perf_counter() - t0
    comp = out[:, ids.shape[1]:].cpu()
    return {"seconds": seconds, "tokens": int(completion_mask_from_ids(comp, eos).sum()), "steps": comp.shape[1]}


def rollout_speed(model, tok, prompts: list[str], n: int = 8, max_new_tokens: int = 96, temperature: float = 0.7,
                  rounds: int = 2, seed: int = 0, limits: dict | None = None) -> dict:
    """generate_rollouts vs plain_generate at one shape, alternating `rounds` times (each after a
    short warm-up); tokens/s are total real tokens over total seconds of each side."""
    from minipods.rollouts import generate_rollouts

    generate_rollouts(model, tok, prompts[:1], 2, max_new_tokens=4, temperature=temperature)  # warm-up
    plain_generate(model, tok, prompts[:1], 2, 4, temperature)
    fast, plain, meta = [], [], []
    for r in range(rounds):
        torch.manual_seed(seed + r)
        ro = generate_rollouts(model, tok, prompts, n, max_new_tokens=max_new_tokens, temperature=temperature,
                               batch_size=len(prompts) * n)
        fast.append({"seconds": ro.seconds, "tokens": ro.num_tokens, "steps": ro.meta["steps"]})
        meta.append(ro.meta)
        torch.manual_seed(seed + r)
        plain.append(plain_generate(model, tok, prompts, n, max_new_tokens, temperature))

    def total(runs):
        s, t = sum(x["seconds"] for x in runs), sum(x["tokens"] for x in runs)
        return {"seconds_per_call": s / len(runs), "tokens": t, "tokens_per_s": t / s}

    f, p = total(fast), total(plain)
    limits = limits or machine_limits()
    steps = sum(m["steps"] for m in meta)
    step_s = sum(m["decode_s"] for m in meta) / steps  # achieved seconds per decode step (fast path)
    P = len(tok(prompts[0], add_special_tokens=False).input_ids)
    decoder = folded_copy(model) if meta[0]["folded"] else model  # the network that decoded
    roof = decode_roofline(decoder, len(prompts) * n, P + steps / len(meta) / 2, limits)
    return {"prompts": len(prompts), "n": n, "max_new_tokens": max_new_tokens, "temperature": temperature,
            "rounds": rounds, "threads": torch.get_num_threads(), "fast": f, "plain": p,
            "ratio": f["tokens_per_s"] / p["tokens_per_s"],
            "fast_parts_s": {k: sum(m[k] for m in meta) / len(meta) for k in ("fold_s", "prefill_s", "decode_s")},
            "levers": {k: meta[0][k] for k in ("folded", "shared_prefill")},
            "limits": limits, "roofline": roof, "decode_step_s": step_s, "x_limit": step_s / roof["limit_s"]}


def rows_rollout_speed(r: dict) -> list[list[str]]:
    f, p, lim, roof = r["fast"], r["plain"], r["limits"], r["roofline"]
    shape = f"{r['prompts']} prompts x n={r['n']}, {r['max_new_tokens']} new tok, T={r['temperature']}"
    parts = r["fast_parts_s"]
    return [
        ["rollout", f"plain generate ({shape})", f"{p['tokens_per_s']:.1f} tok/s, {_fmt_s(p['seconds_per_call'])}/call"],
        ["rollout", "generate_rollouts (shared prefill, inverse-CDF, folded)",
         f"{f['tokens_per_s']:.1f} tok/s, {_fmt_s(f['seconds_per_call'])}/call (fold {_fmt_s(parts['fold_s'])}, "
         f"prefill {_fmt_s(parts['prefill_s'])}, decode {_fmt_s(parts['decode_s'])})"],
        ["rollout", "generate_rollouts / plain tokens/s", _fmt_x(r["ratio"])],
        ["rollout", f"machine ({lim['threads']} thread(s))",
         f"bf16 {lim['bf16_tflops']:.4f} TFLOP/s, fp32 {lim['fp32_tflops']:.3f} TFLOP/s, memory {lim['mem_gbs']:.1f} GB/s"],
        ["rollout", f"decode step limit (batch {roof['batch']}, context {roof['context']:.0f}, {roof['matmul_dtype']} matmuls)",
         f"{_fmt_s(roof['limit_s'])} ({roof['bound']}-bound: {roof['weight_mb'] + roof['kv_mb']:.0f} MB read "
         f"= {_fmt_s(roof['memory_s'])}, {roof['gflop']:.1f} GFLOP = {_fmt_s(roof['compute_s'])})"],
        ["rollout", "achieved decode step", f"{_fmt_s(r['decode_step_s'])} = {r['x_limit']:.1f} x the limit"],
    ]


# ---------------------------------------------------------------- update: fast vs plain GRPO step
def plain_grpo_step(model, optimizer, batch, advantages: torch.Tensor, micro_batch_size: int = 4,
                    temperature: float = 1.0, max_grad_norm: float | None = 1.0) -> float:
    """The baseline GRPO step (one epoch, beta = 0): per micro-batch, forward every [prompt |
    completion] row, full-vocabulary log_softmax, gather, the token-averaged surrogate, backward;
    then clip and step. Returns the loss."""
    from minipods.grpo import grpo_loss, naive_token_logprobs

    num_tokens = max(int(batch.completion_mask.sum()), 1)
    model.train()
    optimizer.zero_grad(set_to_none=True)
    total = 0.0
    for s in range(0, len(batch), micro_batch_size):
        mb = batch.select(list(range(s, min(s + micro_batch_size, len(batch)))))
        logp = naive_token_logprobs(model, mb.prompt_ids, mb.prompt_mask, mb.completion_ids, mb.completion_mask,
                                    temperature)
        loss, _ = grpo_loss(logp, logp.detach(), advantages[s:s + micro_batch_size], mb.completion_mask.to(logp.device),
                            num_tokens)
        loss.backward()
        total += loss.item()
    params = [p for p in model.parameters() if p.requires_grad]
    torch.nn.utils.clip_grad_norm_(params, max_grad_norm or float("inf"))
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    return total


def update_speed(model, batch, micro_batch_size: int = 4, temperature: float = 0.7, rounds: int = 2) -> dict:
    """Seconds per update on `batch` (kept rollouts): grpo_update vs plain_grpo_step vs
    grpo_update(share_prompts=False), alternating `rounds` times after a short warm-up; SGD with
    lr 0, so every call sees the same weights."""
    from minipods.grpo import grpo_update

    g = torch.Generator().manual_seed(0)
    adv = torch.randn(len(batch), generator=g)
    opt = torch.optim.SGD([p for p in model.parameters() if p.requires_grad], lr=0.0)
    runs = {
        "fast": lambda: grpo_update(model, opt, batch, adv, micro_batch_size=micro_batch_size, temperature=temperature),
        "plain": lambda: plain_grpo_step(model, opt, batch, adv, micro_batch_size, temperature),
        "unshared": lambda: grpo_update(model, opt, batch, adv, micro_batch_size=micro_batch_size,
                                        temperature=temperature, share_prompts=False),
    }
    first = batch.group == batch.group[0]
    small = batch.select(first.nonzero()[:2, 0])  # warm-up (first-call costs) on 2 rows of one prompt
    grpo_update(model, opt, small, adv[:2], micro_batch_size=micro_batch_size)
    grpo_update(model, opt, small, adv[:2], micro_batch_size=micro_batch_size, share_prompts=False)
    plain_grpo_step(model, opt, small, adv[:2], micro_batch_size)
    secs = {k: 0.0 for k in runs}
    for _ in range(rounds):
        for k, fn in runs.items():
            t0 = time.perf_counter()
            fn()
            secs[k] += time.perf_counter() - t0
    secs = {k: v / rounds for k, v in secs.items()}
    return {"rows": len(batch), "groups": int(batch.group.unique().numel()), "micro_batch_size": micro_batch_size,
            "prompt_tokens": int(batch.prompt_mask.sum(1).float().mean()),
            "completion_tokens": int(batch.completion_mask.sum()), "rounds": rounds, "threads": torch.get_num_threads(),
            "seconds": secs, "ratio_plain": secs["plain"] / secs["fast"], "ratio_unshared": secs["unshared"] / secs["fast"]}


def rows_update_speed(r: dict) -> list[list[str]]:
    s = r["seconds"]
    shape = f"{r['rows']} rows ({r['groups']} prompts), micro-batch {r['micro_batch_size']}"
    return [["update", f"plain GRPO step ({shape})", f"{_fmt_s(s['plain'])}/update"],
            ["update", "grpo_update, every row in full (share_prompts=False)", f"{_fmt_s(s['unshared'])}/update"],
            ["update", "grpo_update (each prompt once per micro-batch)", f"{_fmt_s(s['fast'])}/update"],
            ["update", "plain / grpo_update time", _fmt_x(r["ratio_plain"])],
            ["update", "share_prompts=False / grpo_update time", _fmt_x(r["ratio_unshared"])]]


# ---------------------------------------------------------------- CLI
def small_setup(seed: int = 0, device: str = "cpu"):
    """(model, tokenizer, prompts): SmolLM2-135M bf16 + LoRA r=16 and 4 synthetic prompts, as --small."""
    from minipods.data import build_prompt, synthetic_problems
    from minipods.model import load_policy

    model, tok = load_policy("smollm2-135m-instruct", dtype=SMALL["dtype"], lora_r=SMALL["lora_r"],
                             lora_alpha=SMALL["lora_alpha"], device=device)
    prompts = [build_prompt(tok, it["question"]) for it in synthetic_problems(SMALL["prompts"], seed=seed)]
    return model, tok, prompts


def kept_batch(model, tok, prompts: list[str], n: int, m: int, max_new_tokens: int, temperature: float, seed: int = 0):
    """Rollouts of the prompts with the first m of each group kept (the update's input at --small)."""
    from minipods.rollouts import generate_rollouts

    torch.manual_seed(seed)
    ro = generate_rollouts(model, tok, prompts, n, max_new_tokens=max_new_tokens, temperature=temperature)
    return ro.select([g * n + i for g in range(len(prompts)) for i in range(m)])


def format_rows(rows: list[list[str]]) -> str:
    w = [max(len(r[i]) for r in rows) for i in range(3)]
    return "\n".join("| " + " | ".join(c.ljust(x) for c, x in zip(r, w)) + " |" for r in rows)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m minipods.bench_speed", description=__doc__.split("\n\n")[0])
    ap.add_argument("--parts", default="rollout,update", help="comma-separated: rollout, update")
    ap.add_argument("--threads", type=int, default=1, help="torch threads (1 on a shared machine)")
    ap.add_argument("--rounds", type=int, default=2, help="alternating rollout measurement rounds per side")
    ap.add_argument("--update-rounds", type=int, default=1,
                    help="alternating update measurement rounds (a bf16 update is minutes on an AVX2 CPU)")
    ap.add_argument("--json", default=None, help="also write the results here")
    a = ap.parse_args(argv)
    parts = [p for p in a.parts.split(",") if p]
    if any(p not in ("rollout", "update") for p in parts):
        print(f"minipods.bench_speed: error: unknown part in {a.parts!r}; expected rollout, update", file=sys.stderr)
        return 2
    torch.set_num_threads(a.threads)
    model, tok, prompts = small_setup()
    res, rows = {}, []
    if "rollout" in parts:
        res["rollout"] = rollout_speed(model, tok, prompts, SMALL["n"], SMALL["max_new_tokens"], SMALL["temperature"],
                                       rounds=a.rounds)
        rows += rows_rollout_speed(res["rollout"])
        print(format_rows(rows_rollout_speed(res["rollout"])), flush=True)
    if "update" in parts:
        batch = kept_batch(model, tok, prompts, SMALL["n"], SMALL["m"], SMALL["max_new_tokens"], SMALL["temperature"])
        res["update"] = update_speed(model, batch, SMALL["micro_batch_size"], SMALL["temperature"],
                                     rounds=a.update_rounds)
        print(format_rows(rows_update_speed(res["update"])), flush=True)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(res, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
