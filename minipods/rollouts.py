"""Rollouts: n sampled completions per prompt with batched HF `generate`.

Paper (Section 3, the inference phase of PODS): for each prompt the policy samples n rollouts;
this phase is embarrassingly parallel and light on memory (no activations are kept for backward),
so it is cheap to make n large. Here all n*P sequences go through `generate` in chunks of
`batch_size` sequences (left padding, so every prompt ends where its completion begins), never a
Python loop per sample. HF `generate` runs the decode loop; three things make it cheap without
changing what is sampled:
  * each distinct prompt is prefilled once (all but its last token) and its KV cache is expanded to
    its n rows, instead of prefilling the same prompt n times;
  * sampling from softmax(logits / T) by inverse CDF (one uniform per row, drawn from torch's global
    RNG, so seeded runs reproduce and resume exactly) instead of `torch.multinomial`, whose
    per-token exponential draws cost more than a small model's decode step on a CPU;
  * on CPU, decoding with a separate inference copy of the policy whose weights hold the LoRA
    adapter folded in (inference.folded_copy; the trained weights are never touched). On a CPU without
    native bf16 (e.g. AVX2) that copy runs a bf16 policy's matmuls as float32 GEMMs on the same
    bf16 values (inference.UpcastLinear: the same math, ~7x faster there).

Layout of the returned batch (B = len(prompts) * n, group-major: prompt 0's n samples first):
    prompt_ids       (B, P)  left-padded prompt tokens
    prompt_mask      (B, P)  1 on real prompt tokens
    completion_ids   (B, C)  right-padded sampled tokens
    completion_mask  (B, C)  1 up to and including the first EOS, 0 after (and on padding)
    group            (B,)    index of the prompt each row answers
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import torch

from minipods.inference import can_fold, folded_copy
from minipods.model import generation_mode


@dataclass
class Rollouts:
    prompt_ids: torch.Tensor
    prompt_mask: torch.Tensor
    completion_ids: torch.Tensor
    completion_mask: torch.Tensor
    group: torch.Tensor
    texts: list[str]
    n: int
    seconds: float = 0.0
    num_tokens: int = 0
    meta: dict = field(default_factory=dict)

    def __len__(self) -> int:
        return self.completion_ids.shape[0]

    @property
    def tokens_per_s(self) -> float:
        return self.num_tokens / self.seconds if self.seconds > 0 else 0.0

    def select(self, idx: list[int] | torch.Tensor) -> "Rollouts":
        """The rows `idx` (e.g. the kept m per prompt), trimmed of all-padding columns."""
        idx = torch.as_tensor(idx, dtype=torch.long)
        pm, cm = self.prompt_mask[idx], self.completion_mask[idx]
        p0 = int((pm.sum(0) > 0).nonzero()[0]) if pm.any() else pm.shape[1]  # first used prompt column
        c1 = int((cm.sum(0) > 0).nonzero()[-1]) + 1 if cm.any() else 1  # last used completion column
        return Rollouts(self.prompt_ids[idx][:, p0:], pm[:, p0:], self.completion_ids[idx][:, :c1],
                        cm[:, :c1], self.group[idx], [self.texts[i] for i in idx.tolist()], self.n,
                        self.seconds, int(cm.sum()), dict(self.meta))


def completion_mask_from_ids(completion_ids: torch.Tensor, eos_ids: list[int]) -> torch.Tensor:
    """(B, C) mask: 1 up to and including the first EOS token of each row, 0 afterwards."""
    is_eos = torch.isin(completion_ids, torch.tensor(eos_ids, device=completion_ids.device))
    # number of EOS tokens strictly before each position; a token is kept while that is 0
    eos_before = torch.cumsum(is_eos.int(), dim=1) - is_eos.int()
    return (eos_before == 0).long()


def _eos_ids(model, tokenizer) -> list[int]:
    ids = model.generation_config.eos_token_id
    ids = [ids] if isinstance(ids, int) else list(ids or [])
    if tokenizer.eos_token_id is not None and tokenizer.eos_token_id not in ids:
        ids.append(tokenizer.eos_token_id)
    return ids


# ---------------------------------------------------------------- sampling
def sample_inverse_cdf(weights: torch.Tensor, u: torch.Tensor, block: int = 128) -> torch.Tensor:
    """(B,) token ids drawn from the rows of `weights` (B, V), unnormalised and >= 0, by inverse CDF.

    u (B,): uniforms in [0, 1). Row b returns the first index whose cumulative weight exceeds
    u_b * total_b, so a token is drawn with probability weight / total and a zero-weight token
    never. Two levels keep it cheap and accurate: cumulative sums of blocks of `block` tokens
    (in float64) pick the block, then a cumulative sum inside that one block picks the token.
    """
    B, V = weights.shape
    nb = -(-V // block)
    w = torch.nn.functional.pad(weights, (0, nb * block - V)).view(B, nb, block)  # (B, nb, block)
    cb = w.sum(-1, dtype=torch.float64).cumsum(-1)  # (B, nb) cumulative block weights
    total = cb[:, -1]
    # u < 1 but u * total can round up to total: stay strictly below it
    target = torch.minimum(u.to(torch.float64) * total, torch.nextafter(total, torch.zeros_like(total)))
    j = torch.searchsorted(cb, target[:, None], right=True).squeeze(1)  # (B,) block holding the target
    before = torch.where(j > 0, cb.gather(1, (j - 1).clamp(min=0)[:, None]).squeeze(1), 0.0)
    inner = w[torch.arange(B, device=w.device), j].cumsum(-1, dtype=torch.float64)  # (B, block)
    # the block was chosen because its weight is > 0; clamp rounding so a positive-weight token is hit
    rest = torch.minimum((target - before).clamp(min=0), torch.nextafter(inner[:, -1], torch.zeros_like(total)))
    k = torch.searchsorted(inner, rest[:, None], right=True).squeeze(1)
    return j * block + k


class InverseCDFSampler:
    """A `generate` logits processor that samples: softmax(scores / T), nucleus-filtered when
    top_p < 1 (HF's own TopPLogitsWarper, so the same distribution as `do_sample=True`), drawn by
    inverse CDF. It returns 0 at the drawn token and -inf elsewhere, so `generate` runs greedy
    (do_sample=False) over it. Uniforms come from torch's global RNG on the logits' device (the
    state train.py checkpoints), one per row and step."""

    def __init__(self, temperature: float = 1.0, top_p: float = 1.0):
        from transformers import TopPLogitsWarper

        self.temperature = temperature
        self.top_p = TopPLogitsWarper(top_p) if top_p < 1.0 else None

    def __call__(self, input_ids: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
        scores = scores.float() / self.temperature  # (B, V)
        if self.top_p is not None:
            scores = self.top_p(input_ids, scores)
        weights = torch.exp(scores - scores.amax(-1, keepdim=True))  # unnormalised softmax
        u = torch.rand(scores.shape[0], dtype=torch.float64, device=scores.device)
        tok = sample_inverse_cdf(weights, u)  # (B,)
        return torch.full_like(scores, -float("inf")).scatter_(1, tok[:, None], 0.0)


# ---------------------------------------------------------------- shared prefill
def _prefill_distinct(model, ids: torch.Tensor, am: torch.Tensor):
    """Run the distinct prompts (G, P) once, all but their last token; return each layer's (keys,
    values), (G, heads, P-1, head_dim), or None where the cache is not a plain DynamicCache
    (sliding-window or other layer kinds: then every row is prefilled by `generate` as before)."""
    from transformers import DynamicCache
    from transformers.cache_utils import DynamicLayer

    if ids.shape[1] < 2:
        return None
    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    pos = (am.cumsum(-1) - 1).clamp(min=0)  # as `generate` numbers positions under left padding
    out = base.get_decoder()(input_ids=ids[:, :-1], attention_mask=am[:, :-1], position_ids=pos[:, :-1],
                             use_cache=True)  # the backbone only: no logits for the prompt tokens
    cache = out.past_key_values
    if type(cache) is not DynamicCache or any(type(layer) is not DynamicLayer for layer in cache.layers):
        return None
    return [(layer.keys, layer.values) for layer in cache.layers]


@torch.no_grad()
def generate_rollouts(model, tokenizer, prompts: list[str], n: int, max_new_tokens: int = 256,
                      temperature: float = 0.9, top_p: float = 1.0, batch_size: int = 64,
                      max_prompt_tokens: int | None = None, do_sample: bool = True,
                      progress: bool = False, fold_adapter: bool | None = None) -> Rollouts:
    """Sample `n` completions for each prompt string (already chat-formatted, see data.build_prompt).

    batch_size: sequences per `generate` call; bounds memory (the KV cache grows with it).
    max_prompt_tokens: left-truncate longer prompts (the paper uses 512).
    fold_adapter: decode with inference.folded_copy (the LoRA adapter folded into a separate copy of
        the weights, refreshed each call). None = on CPU where it applies. It never applies to 4-bit models (the copy
        would cost them their memory advantage): they decode with the unmerged adapter. On CUDA it
        is opt-in (True), as it costs one more copy of the adapted linear weights in GPU memory.
    meta of the result: fold_s, prefill_s, decode_s (seconds), steps (decode steps), folded and
    shared_prefill (which levers applied).
    """
    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    if not prompts:
        raise ValueError("no prompts given")
    device = next(model.parameters()).device
    eos = _eos_ids(model, tokenizer)
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else eos[0]
    tokenizer.padding_side = "left"
    enc = tokenizer(prompts, add_special_tokens=False, padding=True, return_tensors="pt",
                    truncation=max_prompt_tokens is not None, max_length=max_prompt_tokens)
    # repeat each prompt n times, group-major: rows [g*n, (g+1)*n) answer prompt g
    prompt_ids = enc.input_ids.repeat_interleave(n, dim=0)  # (B, P)
    prompt_mask = enc.attention_mask.repeat_interleave(n, dim=0)  # (B, P)
    group = torch.arange(len(prompts)).repeat_interleave(n)  # (B,)
    B, P = prompt_ids.shape

    from transformers import DynamicCache, LogitsProcessorList

    chunks = []
    t0 = time.perf_counter()
    rng = range(0, B, batch_size)
    if progress:
        from tqdm.auto import tqdm
        rng = tqdm(rng, desc="rollouts", leave=False)
    if fold_adapter is None:
        fold_adapter = device.type == "cpu" and can_fold(model)
    sampler = LogitsProcessorList([InverseCDFSampler(temperature, top_p)] if do_sample else [])
    with generation_mode(model):
        gen = (folded_copy(model) if fold_adapter else None) or model
        t1 = time.perf_counter()
        kv = _prefill_distinct(gen, enc.input_ids.to(device), enc.attention_mask.to(device))  # [(G,h,P-1,d)] * layers
        t2 = time.perf_counter()
        for s in rng:
            ids, am = prompt_ids[s:s + batch_size].to(device), prompt_mask[s:s + batch_size].to(device)
            cache = None
            if kv is not None:  # each row starts from its prompt's cache (index_select copies: rows diverge)
                g = group[s:s + batch_size].to(device)
                cache = DynamicCache(ddp_cache_data=[(k[g], v[g]) for k, v in kv])
            out = gen.generate(input_ids=ids, attention_mask=am, past_key_values=cache, max_new_tokens=max_new_tokens,
                               do_sample=False, logits_processor=sampler, temperature=None, top_p=None, top_k=None,
                               pad_token_id=pad, eos_token_id=eos)
            chunks.append(out[:, P:].cpu())  # (b, c_chunk): completions only
    if device.type == "cuda":
        torch.cuda.synchronize()
    t3 = time.perf_counter()
    seconds = t3 - t0
    meta = {"fold_s": t1 - t0, "prefill_s": t2 - t1, "decode_s": t3 - t2, "steps": max(c.shape[1] for c in chunks),
            "folded": gen is not model, "shared_prefill": kv is not None}

    C = max(c.shape[1] for c in chunks)
    completion_ids = torch.full((B, max(C, 1)), pad, dtype=torch.long)
    completion_mask = torch.zeros((B, max(C, 1)), dtype=torch.long)
    row = 0
    for c in chunks:  # masks per chunk: padding added here to align chunks is never a real token
        completion_ids[row:row + c.shape[0], :c.shape[1]] = c
        completion_mask[row:row + c.shape[0], :c.shape[1]] = completion_mask_from_ids(c, eos)
        row += c.shape[0]
    texts = tokenizer.batch_decode(completion_ids * completion_mask + pad * (1 - completion_mask),
                                   skip_special_tokens=True)
    return Rollouts(prompt_ids, prompt_mask, completion_ids, completion_mask, group, texts, n,
                    seconds, int(completion_mask.sum()), meta)
