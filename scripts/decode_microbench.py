"""The kernels of one float32 decode step at the --small shape, alone: what each lever of the fast
engine was chosen (or dropped) on. `python scripts/decode_microbench.py [--threads 2]`.

SmolLM2-135M's shapes, 32 rows (4 prompts x n=8), ~114 cached tokens; random weights, 30 distinct
layers so that weights stream from memory as in the model (cold caches). Prints ms per decode step
(all 30 layers, or one LM head) and GFLOP/s for each variant.
"""

import argparse
import time

import torch
from transformers.models.llama.modeling_llama import LlamaRMSNorm

from minipods.fast.inference import _decode_attention

F = torch.nn.functional
L, M, d, kv, ff, V, heads, kv_heads, hd, ctx, cap = 30, 32, 576, 192, 1536, 49152, 9, 3, 64, 114, 146


def per_call_ms(f, rounds=10):
    for _ in range(2):
        f()
    t0 = time.perf_counter()
    for _ in range(rounds):
        f()
    return (time.perf_counter() - t0) / rounds * 1e3


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--threads", type=int, default=2)
    torch.set_num_threads(p.parse_args().threads)
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
        raise SystemExit("decode_microbench: the fused packed q/k/v differs from the separate ones")
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
        raise SystemExit("decode_microbench: attention over the position-major cache differs")
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
        raise SystemExit(f"decode_microbench: the shared-prefix form differs from plain attention by {err:.2e}")
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


if __name__ == "__main__":
    main()
