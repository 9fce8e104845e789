"""Where a decode step's time goes: `python -m minipods.measure.decode_profile`.

The fast engine's float32 rollouts at the `--small` shape (4 prompts x n=8, 64 new tokens, T=0.7)
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
    args = p.parse_args(argv)
    torch.set_num_threads(args.threads)
    model, tok = load_policy(args.model, dtype="float32", lora_r=16, lora_alpha=32, device="cpu")
    prompts = [build_prompt(tok, it["question"]) for it in synthetic_problems(4, seed=0)]
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
