"""The fast rollout engine: `minipods.rollouts.generate_rollouts`'s contract, with less work.

Same `Rollouts` from the same distribution; HF `generate` runs the decode loop. The levers (docs/performance.md
measures each): shared prefill (each distinct prompt runs once, its KV cache copied to its n rows); inverse-CDF
sampling (fast.sampler); on CPU, an inference copy with the adapter folded in, its linears packed and q/k/v,
gate/up fused (fast.inference); a KV cache written in place (fast.cache)."""

from __future__ import annotations

import time

import torch

from minipods.fast.cache import plain_layers, roomy_cache
from minipods.fast.inference import PackedLinear, PackedSibling, can_fold, folded_copy
from minipods.fast.sampler import InverseCDFSampler
from minipods.model import base_model_of, generation_mode
from minipods.rollouts import Rollouts, assemble, eos_ids, generation_kwargs, positions_from_mask, repeat_prompts


def prefill_distinct(model, ids: torch.Tensor, am: torch.Tensor):
    """Run the distinct prompts (G, P) once, all but their last token; return each layer's (keys, values), (G, heads,
    P-1, head_dim), or None where the cache is not a plain DynamicCache (then `generate` prefills every row)."""
    if ids.shape[1] < 2:
        return None
    pos = positions_from_mask(am)
    out = base_model_of(model).get_decoder()(input_ids=ids[:, :-1], attention_mask=am[:, :-1],
                                             position_ids=pos[:, :-1], use_cache=True)  # no logits needed
    layers = plain_layers(out.past_key_values)
    return None if layers is None else [(layer.keys, layer.values) for layer in layers]


def _decode(gen, prompt_ids, prompt_mask, group, kv, starts, batch_size, sampler, max_new_tokens, pad, eos, roomy=True):
    """`generate` over the rows in chunks, each row starting from its prompt's cache when there is one."""
    from transformers import DynamicCache
    device, P, chunks = next(gen.parameters()).device, prompt_ids.shape[1], []
    for s in starts:
        ids, am = prompt_ids[s:s + batch_size].to(device), prompt_mask[s:s + batch_size].to(device)
        g = None if kv is None else group[s:s + batch_size].to(device)  # (b,) each row's prompt
        if roomy:  # each row starts from a copy of its prompt's keys/values
            cache = roomy_cache(kv, room=max_new_tokens, index=g)
        else:
            cache = None if kv is None else DynamicCache(ddp_cache_data=[(k[g], v[g]) for k, v in kv])
        out = gen.generate(input_ids=ids, attention_mask=am, past_key_values=cache, max_new_tokens=max_new_tokens,
                           logits_processor=sampler, pad_token_id=pad, eos_token_id=eos,
                           **generation_kwargs(False))  # greedy over the sampler's one-hot scores
        chunks.append(out[:, P:].cpu())  # (b, c_chunk): completions only
        del cache  # free this chunk's keys/values before the next chunk allocates its own
    return chunks


@torch.no_grad()
def generate_rollouts(model, tokenizer, prompts: list[str], n: int, max_new_tokens: int = 256,
                      temperature: float = 0.9, top_p: float = 1.0, batch_size: int = 64,
                      max_prompt_tokens: int | None = None, do_sample: bool = True, fold_adapter: bool | None = None,
                      pack_weights: bool | None = None, grow_in_place: bool = True, fuse_siblings: bool = True) -> Rollouts:
    """minipods.rollouts.generate_rollouts, plus the levers (None = where it applies): fold_adapter
    (folded_copy; CPU default, opt-in on CUDA), pack_weights and fuse_siblings (its pack and fuse),
    grow_in_place (fast.cache). meta: fold_s, prefill_s, decode_s, steps, and which levers applied."""
    from transformers import LogitsProcessorList
    ids, am, prompt_ids, prompt_mask, group = repeat_prompts(tokenizer, prompts, n, max_prompt_tokens)  # (G|B, P)
    device, eos = next(model.parameters()).device, eos_ids(model, tokenizer)
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else eos[0]
    starts = range(0, prompt_ids.shape[0], batch_size)
    if fold_adapter is None:
        fold_adapter = device.type == "cpu" and can_fold(model)
    sampler = LogitsProcessorList([InverseCDFSampler(temperature, top_p)] if do_sample else [])
    t0 = time.perf_counter()
    with generation_mode(model):
        gen = (folded_copy(model, pack=pack_weights, fuse=fuse_siblings) if fold_adapter else None) or model
        t1 = time.perf_counter()
        kv = prefill_distinct(gen, ids.to(device), am.to(device))  # [(G, h, P-1, d)] * layers
        t2 = time.perf_counter()
        chunks = _decode(gen, prompt_ids, prompt_mask, group, kv, starts, batch_size, sampler, max_new_tokens,
                         pad, eos, grow_in_place)
    if device.type == "cuda":
        torch.cuda.synchronize(device)  # the run's card (--device cuda:1), not the current one
    t3 = time.perf_counter()
    meta = {"fold_s": t1 - t0, "prefill_s": t2 - t1, "decode_s": t3 - t2, "steps": max(c.shape[1] for c in chunks),
            "folded": gen is not model, "shared_prefill": kv is not None,
            "packed": any(isinstance(m, PackedLinear) for m in gen.modules()), "grown_in_place": grow_in_place,
            "fused_siblings": any(isinstance(m, PackedSibling) for m in gen.modules())}
    return assemble(tokenizer, prompt_ids, prompt_mask, group, chunks, eos, pad, n, t3 - t0, meta)
