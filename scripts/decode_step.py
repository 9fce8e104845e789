"""A decode step of the fast engine, taken apart: `python scripts/decode_step.py [--levers | --kernels]`.

Three views of one float32 decode step at the `--small` shape, each what a lever of the fast engine
was chosen (or dropped) on:

  (default)  where its time goes, part by part (profile_decode, below)
  --levers   each switchable lever turned off alone, alternating rounds (lever_ablation)
  --kernels  the step's kernels alone on random weights (kernels(): block linears, LM head, attention,
             RMSNorm, each variant with its ms and GFLOP/s)

The profile: the fast engine's float32 rollouts at the `--small` shape (4 prompts x n=8, 64 new tokens, T=0.7)
with each part of a decode step timed: the block linears, the LM head, the attention kernel, the
KV-cache update, the RMSNorms, the sampler (a `generate` logits processor), the rest of the model's
forward (rotary embeddings, activations, residual adds, the Python between ops) and `generate`'s
own loop around the forward. Times are exclusive (a part nested in another counts once, in the
inner one) and per decode step. Beside them, the step's roofline limit (measure.speed).

Lever switches (--no-pack, --no-fuse, --no-grow, --sdpa) reproduce the engine before those levers, so the
same command gives the before and after columns of docs/performance.md.
"""

from __future__ import annotations

import argparse
import time
from contextlib import contextmanager

import torch


class PartTimer:
    """Exclusive wall-clock per named part: a part's time excludes the parts timed inside it. Only
    parts inside a `root` part count (so the prefill's forward, outside the decode loop, does not)."""

    def __init__(self, root: str):
        self.root = root
        self.total: dict[str, float] = {}
        self.stack: list[list] = []  # [name, start (None: not counted), time spent in children]

    def enter(self, name: str) -> None:
        counted = name == self.root or (self.stack and self.stack[0][1] is not None)
        self.stack.append([name, time.perf_counter() if counted else None, 0.0])

    def exit(self) -> None:
        name, t0, inner = self.stack.pop()
        if t0 is None:
            return
        dt = time.perf_counter() - t0
        self.total[name] = self.total.get(name, 0.0) + dt - inner
        if self.stack:
            self.stack[-1][2] += dt

    def wrap(self, name: str, fn):
        def timed(*args, **kwargs):
            self.enter(name)
            try:
                return fn(*args, **kwargs)
            finally:
                self.exit()
        return timed


LOOP = "generate's loop (outside the forward)"


@contextmanager
def timed_parts(timer: PartTimer, decoder):
    """Time the fast engine's decode loop (fast.rollouts._decode, the root) and `decoder`'s parts
    in it (module hooks; the attention function, cache update and sampler patched) for the duration
    of the block; everything restored after."""
    from transformers.cache_utils import DynamicLayer
    from transformers.modeling_utils import ALL_ATTENTION_FUNCTIONS

    from minipods.fast import rollouts as fast_rollouts
    from minipods.fast.cache import RoomyLayer
    from minipods.fast.sampler import InverseCDFSampler as sampler_cls

    def kind(name, mod):
        if mod is decoder.get_output_embeddings():
            return "LM head"
        if type(mod).__name__.endswith("RMSNorm"):
            return "RMSNorm"
        if hasattr(mod, "in_features") and "layers." in name:
            return "block linears"
        return None

    handles = []
    for name, mod in decoder.named_modules():
        k = kind(name, mod)
        if k:
            handles.append(mod.register_forward_pre_hook(lambda m, a, k=k: timer.enter(k)))
            handles.append(mod.register_forward_hook(lambda m, a, o: timer.exit()))
    handles.append(decoder.register_forward_pre_hook(lambda m, a: timer.enter("rest of the forward")))
    handles.append(decoder.register_forward_hook(lambda m, a, o: timer.exit()))
    impl = decoder.config._attn_implementation
    saved = {"attn": ALL_ATTENTION_FUNCTIONS[impl], "dyn": DynamicLayer.update, "roomy": RoomyLayer.update,
             "sampler": sampler_cls.__call__, "decode": fast_rollouts._decode}
    fast_rollouts._decode = timer.wrap(LOOP, saved["decode"])
    ALL_ATTENTION_FUNCTIONS[impl] = timer.wrap("attention kernel", saved["attn"])
    DynamicLayer.update = timer.wrap("KV cache update", saved["dyn"])
    RoomyLayer.update = timer.wrap("KV cache update", saved["roomy"])
    sampler_cls.__call__ = timer.wrap("sampler (logits processor)", saved["sampler"])
    try:
        yield
    finally:
        for h in handles:
            h.remove()
        ALL_ATTENTION_FUNCTIONS[impl] = saved["attn"]
        DynamicLayer.update, RoomyLayer.update = saved["dyn"], saved["roomy"]
        sampler_cls.__call__ = saved["sampler"]
        fast_rollouts._decode = saved["decode"]


def profile_decode(model, tok, prompts: list[str], n: int = 8, max_new_tokens: int = 64, temperature: float = 0.7,
                   pack: bool | None = None, grow: bool = True, sdpa: bool = False, rounds: int = 2,
                   fuse: bool = True) -> dict:
    """ms per decode step of each part (PartTimer), `rounds` seeded calls after a warm-up; the
    untimed decode step of the same calls beside it (the hooks' own cost is the difference)."""
    from minipods.fast.inference import folded_copy
    from minipods.fast.rollouts import generate_rollouts

    kw = dict(max_new_tokens=max_new_tokens, temperature=temperature, batch_size=len(prompts) * n,
              pack_weights=pack, grow_in_place=grow, fuse_siblings=fuse)
    generate_rollouts(model, tok, prompts[:1], 2, **{**kw, "max_new_tokens": 4})  # warm-up, builds the copy
    decoder = folded_copy(model, pack=pack, fuse=fuse)
    if sdpa:
        decoder.set_attn_implementation("sdpa")
    plain_s, steps = 0.0, 0
    for r in range(rounds):  # untimed
        torch.manual_seed(r)
        ro = generate_rollouts(model, tok, prompts, n, **kw)
        plain_s, steps = plain_s + ro.meta["decode_s"], steps + ro.meta["steps"]
    timer, timed_s, timed_steps = PartTimer(LOOP), 0.0, 0
    with timed_parts(timer, decoder):
        for r in range(rounds):
            torch.manual_seed(r)
            ro = generate_rollouts(model, tok, prompts, n, **kw)
            timed_s, timed_steps = timed_s + ro.meta["decode_s"], timed_steps + ro.meta["steps"]
    parts = {k: v / timed_steps * 1e3 for k, v in timer.total.items()}
    return {"parts_ms": parts, "timed_step_ms": timed_s / timed_steps * 1e3, "step_ms": plain_s / steps * 1e3,
            "levers": {"packed": ro.meta["packed"], "fused_siblings": ro.meta["fused_siblings"], "grown_in_place": grow,
                       "attention": decoder.config._attn_implementation}}


LEVERS = {"all levers": {}, "without the oneDNN packed weights": {"pack_weights": False},
          "without the fused q/k/v and gate/up": {"fuse_siblings": False},
          "without the in-place KV cache": {"grow_in_place": False},
          "without the folded copy (nor packing)": {"fold_adapter": False}}


def lever_ablation(model, tok, prompts: list[str], n: int = 8, max_new_tokens: int = 64, temperature: float = 0.7,
                   rounds: int = 2, seed: int = 0) -> dict:
    """Each switchable lever of the fast engine turned off alone (LEVERS), alternating with the
    others `rounds` times at one shape: seconds per decode step and real tokens/s of each."""
    from minipods.fast.rollouts import generate_rollouts

    generate_rollouts(model, tok, prompts[:1], 2, max_new_tokens=4, temperature=temperature)  # warm-up
    out = {k: {"decode_s": 0.0, "steps": 0, "seconds": 0.0, "tokens": 0} for k in LEVERS}
    for r in range(rounds):
        for name, kw in LEVERS.items():
            torch.manual_seed(seed + r)
            ro = generate_rollouts(model, tok, prompts, n, max_new_tokens=max_new_tokens, temperature=temperature,
                                   batch_size=len(prompts) * n, **kw)
            o = out[name]
            o["decode_s"] += ro.meta["decode_s"]
            o["steps"] += ro.meta["steps"]
            o["seconds"] += ro.seconds
            o["tokens"] += ro.num_tokens
    return {k: {"decode_step_s": o["decode_s"] / o["steps"], "tokens_per_s": o["tokens"] / o["seconds"]}
            for k, o in out.items()}


# ---------------------------------------------------------------- the kernels alone
F = torch.nn.functional
L, M, d, kv, ff, V, heads, kv_heads, hd, ctx, cap = 30, 32, 576, 192, 1536, 49152, 9, 3, 64, 114, 146


def per_call_ms(f, rounds=10):
    for _ in range(2):
        f()
    t0 = time.perf_counter()
    for _ in range(rounds):
        f()
    return (time.perf_counter() - t0) / rounds * 1e3


def kernels():
    """SmolLM2-135M's shapes, 32 rows (4 prompts x n=8), ~114 cached tokens; random weights, 30 distinct
    layers so that weights stream from memory as in the model (cold caches). Prints ms per decode step
    (all 30 layers, or one LM head) and GFLOP/s for each variant; each rewrite checked equal first."""
    from transformers.models.llama.modeling_llama import LlamaRMSNorm

    from minipods.fast.inference import _decode_attention
    g = torch.Generator().manual_seed(0)
    shapes = [(d, d), (kv, d), (kv, d), (d, d), (ff, d), (ff, d), (d, ff)]  # q k v o gate up down
    layers = [[torch.randn(o, i, generator=g) for o, i in shapes] for _ in range(L)]
    x = {d: torch.randn(M, 1, d, generator=g), ff: torch.randn(M, 1, ff, generator=g)}
    pack = torch.ops.mkldnn._reorder_linear_weight
    packed = [[pack(w) for w in ws] for ws in layers]
    fused = [[torch.cat(ws[:3]), ws[3], torch.cat(ws[4:6]), ws[6]] for ws in layers]
    packed_fused = [[pack(w) for w in ws] for ws in fused]
    packed_32 = [[pack(w, M) for w in ws] for ws in layers]  # packed for a known batch of M rows
    head = torch.randn(V, d, generator=g)
    head_packed = pack(head)
    block_flop, head_flop = 2 * M * L * sum(o * i for o, i in shapes), 2 * M * V * d

    def lin(w):
        return lambda: [F.linear(x[w_.shape[1]], w_) for ws in w for w_ in ws]

    def onednn(x_, w_):
        return torch.ops.mkldnn._linear_pointwise(x_, w_, None, "none", [], "")

    def lin_packed(packed, shapes):
        return lambda: [onednn(x[w.shape[1]], w_) for ws in packed for w_, w in zip(ws, shapes)]

    # fusing is exact here: each output's dot product is the same computation, bit for bit
    qkv = onednn(x[d], packed_fused[0][0]).split([d, kv, kv], -1)
    if not all(torch.equal(a, onednn(x[d], w)) for a, w in zip(qkv, packed[0][:3])):
        raise SystemExit("decode_step --kernels: the fused packed q/k/v differs from the separate ones")
    rows = [("block linears, F.linear", lin(layers), block_flop),
            ("block linears, F.linear, q/k/v and gate/up fused", lin(fused), block_flop),
            ("block linears, oneDNN packed", lin_packed(packed, layers[0]), block_flop),
            ("block linears, oneDNN packed, q/k/v and gate/up fused", lin_packed(packed_fused, fused[0]), block_flop),
            ("block linears, oneDNN packed for 32 rows", lin_packed(packed_32, layers[0]), block_flop),
            ("LM head, F.linear", lambda: F.linear(x[d], head), head_flop),
            ("LM head, oneDNN packed",
             lambda: torch.ops.mkldnn._linear_pointwise(x[d], head_packed, None, "none", [], ""), head_flop)]
    ks = [torch.randn(M, kv_heads, cap, hd, generator=g)[:, :, :ctx] for _ in range(L)]
    vs = [torch.randn(M, kv_heads, cap, hd, generator=g)[:, :, :ctx] for _ in range(L)]
    q, mask = torch.randn(M, heads, 1, hd, generator=g), torch.zeros(M, 1, 1, ctx)
    qg = q.reshape(M, kv_heads, heads // kv_heads, hd)  # transformers' pack_gqa for one query token
    rows += [("attention, SDPA (CPU flash kernel)",
              lambda: [F.scaled_dot_product_attention(qg, k, v, attn_mask=mask) for k, v in zip(ks, vs)], None),
             ("attention, two small matmuls (_decode_attention)",
              lambda: [_decode_attention(None, q, k, v, mask) for k, v in zip(ks, vs)], None)]
    # the same keys/values held position-major, (cap, M, h, d): the filled part one contiguous block
    kp, vp = ([t.permute(2, 0, 1, 3).contiguous()[:ctx].permute(1, 2, 0, 3) for t in ts] for ts in (ks, vs))
    if not torch.equal(_decode_attention(None, q, kp[0], vp[0], mask), _decode_attention(None, q, ks[0], vs[0], mask)):
        raise SystemExit("decode_step --kernels: attention over the position-major cache differs")
    rows += [("attention, two small matmuls, position-major cache",
              lambda: [_decode_attention(None, q, k, v, mask) for k, v in zip(kp, vp)], None)]
    # not built into the engine: each prompt's keys/values held once for its n = 8 rows (4 prompts,
    # 85 prompt tokens), each row's own completion keys apart; one softmax over both parts
    G, n, P = 4, M // 4, 85
    pk = [torch.randn(G, kv_heads, P, hd, generator=g) for _ in range(L)]
    pv = [torch.randn(G, kv_heads, P, hd, generator=g) for _ in range(L)]
    sk, sv = [k[:, :, P:] for k in ks], [v[:, :, P:] for v in vs]

    def shared_prefix(pk, pv, sk, sv):
        per_prompt = qg.reshape(G, n, kv_heads, -1, hd).transpose(1, 2).reshape(G, kv_heads, -1, hd)  # (G, h, n g, d)
        s1 = (per_prompt @ pk.transpose(-1, -2)).reshape(G, kv_heads, n, -1, P).transpose(1, 2).reshape(M, kv_heads, -1, P)
        p = torch.cat([s1, qg @ sk.transpose(-1, -2)], -1).mul(hd ** -0.5).softmax(-1)  # (M, h, g, ctx)
        p1 = p[..., :P].reshape(G, n, kv_heads, -1, P).transpose(1, 2).reshape(G, kv_heads, -1, P)
        o1 = (p1 @ pv).reshape(G, kv_heads, n, -1, hd).transpose(1, 2).reshape(M, kv_heads, -1, hd)
        return o1 + p[..., P:] @ sv

    # its math: SDPA (the row above) over each row's concatenated keys (its prompt's, then its own;
    # rows of a prompt are contiguous), to float32 rounding
    full_k, full_v = (torch.cat([a[0].repeat_interleave(n, 0), b[0]], 2) for a, b in ((pk, sk), (pv, sv)))
    ref = F.scaled_dot_product_attention(qg, full_k, full_v)  # (M, h, g, d)
    err = (shared_prefix(pk[0], pv[0], sk[0], sv[0]) - ref).abs().max().item()
    if not err < 1e-5:
        raise SystemExit(f"decode_step --kernels: the shared-prefix form differs from plain attention by {err:.2e}")
    print(f"shared-prefix attention vs attention over the concatenated keys: max |diff| {err:.1e}")
    rows += [("attention, shared prefix (not in the engine)",
              lambda: [shared_prefix(*a) for a in zip(pk, pv, sk, sv)], None)]
    norm, h = LlamaRMSNorm(d), torch.randn(M, 1, d, generator=g)
    rows += [("61 RMSNorms, transformers' LlamaRMSNorm", lambda: [norm(h) for _ in range(61)], None),
             ("61 RMSNorms, F.rms_norm", lambda: [F.rms_norm(h, (d,), norm.weight, 1e-5) for _ in range(61)], None)]
    print(f"{torch.get_num_threads()} threads; ms per decode step (32 rows, {ctx} cached tokens)")
    with torch.no_grad():
        for name, f, flop in rows:
            ms = per_call_ms(f)
            rate = f", {flop / ms / 1e6:.0f} GFLOP/s" if flop else ""
            print(f"  {name:52s} {ms:7.2f} ms{rate}")


def main(argv=None) -> int:
    from minipods.data import build_prompt, synthetic_problems
    from minipods.measure.speed import decode_roofline, machine_limits
    from minipods.model import DEFAULT_MODEL, load_policy

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--model", default=DEFAULT_MODEL)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--rounds", type=int, default=2, help="seeded rollout calls timed (after one untimed set)")
    p.add_argument("--no-pack", action="store_true", help="the inference copy without oneDNN packed weights")
    p.add_argument("--no-grow", action="store_true", help="concatenating KV cache (transformers' DynamicCache)")
    p.add_argument("--no-fuse", action="store_true", help="q/k/v and gate/up as separate packed matmuls")
    p.add_argument("--sdpa", action="store_true", help="transformers' SDPA attention for decode steps")
    p.add_argument("--levers", action="store_true", help="each lever of the engine off alone, instead of the profile")
    p.add_argument("--kernels", action="store_true", help="the step's kernels alone on random weights")
    args = p.parse_args(argv)
    torch.set_num_threads(args.threads)
    if args.kernels:
        kernels()
        return 0
    model, tok = load_policy(args.model, dtype="float32", lora_r=16, lora_alpha=32, device="cpu")
    prompts = [build_prompt(tok, it["question"]) for it in synthetic_problems(4, seed=0)]
    if args.levers:
        print(f"decode step, float32, 4 prompts x n=8, 64 new tokens, {args.threads} threads, {args.rounds} rounds")
        print("| levers | ms per decode step | tokens/s |\n|---|---|---|")
        for k, v in lever_ablation(model, tok, prompts, rounds=args.rounds).items():
            print(f"| {k} | {v['decode_step_s'] * 1e3:.1f} | {v['tokens_per_s']:.1f} |")
        return 0
    pack = False if args.no_pack else None
    r = profile_decode(model, tok, prompts, pack=pack, grow=not args.no_grow, fuse=not args.no_fuse,
                       sdpa=args.sdpa, rounds=args.rounds)
    from minipods.fast.inference import folded_copy

    P = len(tok(prompts[0], add_special_tokens=False).input_ids)
    roof = decode_roofline(folded_copy(model, pack=pack, fuse=not args.no_fuse), 32, P + 32, machine_limits())
    print(f"decode step, float32, 4 prompts x n=8, 64 new tokens, {args.threads} threads; levers {r['levers']}")
    print("| part | ms per decode step | share |\n|---|---|---|")
    for k, v in sorted(r["parts_ms"].items(), key=lambda kv: -kv[1]):
        print(f"| {k} | {v:.1f} | {v / r['timed_step_ms']:.0%} |")
    print(f"| **decode step, timed (sum)** | **{r['timed_step_ms']:.1f}** | |")
    print(f"| decode step, untimed | {r['step_ms']:.1f} | |")
    print(f"| roofline limit ({roof['bound']}-bound) | {roof['limit_s'] * 1e3:.1f} | untimed step = "
          f"{r['step_ms'] / 1e3 / roof['limit_s']:.2f} x the limit |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
