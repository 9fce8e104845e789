"""Rollouts: n sampled completions per prompt with batched HF `generate` (the reference).

Paper (Section 3, the inference phase of PODS): for each prompt the policy samples n rollouts;
this phase is embarrassingly parallel and light on memory (no activations are kept for backward),
so it is cheap to make n large. All n*P sequences go through `generate` in chunks of `batch_size`.
`minipods.fast.rollouts` samples the same distribution faster behind the same contract (unless --no-fast).

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


def positions_from_mask(attention_mask: torch.Tensor) -> torch.Tensor:
    """(B, L) position ids that count real tokens only, as `generate` numbers them under left padding."""
    return (attention_mask.cumsum(-1) - 1).clamp(min=0)


def completion_mask_from_ids(completion_ids: torch.Tensor, eos_ids: list[int]) -> torch.Tensor:
    """(B, C) mask: 1 up to and including the first EOS token of each row, 0 afterwards."""
    is_eos = torch.isin(completion_ids, torch.tensor(eos_ids, device=completion_ids.device))
    # number of EOS tokens strictly before each position; a token is kept while that is 0
    eos_before = torch.cumsum(is_eos.int(), dim=1) - is_eos.int()
    return (eos_before == 0).long()


def eos_ids(model, tokenizer) -> list[int]:
    """Every token id that ends a completion (the model's generation config and the tokenizer's)."""
    ids = model.generation_config.eos_token_id
    ids = [ids] if isinstance(ids, int) else list(ids or [])
    if tokenizer.eos_token_id is not None and tokenizer.eos_token_id not in ids:
        ids.append(tokenizer.eos_token_id)
    return ids


# Every logits-changing knob of `generate` at its neutral value. transformers fills each knob a call
# leaves unset from the model's own generation_config (Qwen2.5-Instruct ships repetition_penalty 1.05,
# top_k 20, top_p 0.8), and that would sample off-policy: the update's log-probs are softmax(logits / T).
NEUTRAL_GENERATION = dict(top_k=None, min_p=None, typical_p=1.0, epsilon_cutoff=0.0, eta_cutoff=0.0,
                          repetition_penalty=1.0, encoder_repetition_penalty=1.0, no_repeat_ngram_size=0,
                          encoder_no_repeat_ngram_size=0, bad_words_ids=None, sequence_bias=None,
                          suppress_tokens=None, begin_suppress_tokens=None, forced_bos_token_id=None,
                          forced_eos_token_id=None, min_length=0, min_new_tokens=None,
                          exponential_decay_length_penalty=None, num_beams=1, num_return_sequences=1,
                          guidance_scale=None, renormalize_logits=False, penalty_alpha=None, dola_layers=None,
                          watermarking_config=None, remove_invalid_values=False)


class NonFiniteLogits(ValueError):
    """NaN/inf logits (float16 overflow), caught before a token is sampled from them: training saves and stops."""

    def __init__(self):
        super().__init__("non-finite logits (float16 overflowed on this model): a training run saved its whole steps;"
                         " continue with --resume --dtype float32 (or --dtype bfloat16 on a GPU of capability 8.0+)")


def finite_or_raise(input_ids: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
    """A logits processor: (B, V) scores pass unchanged unless a row's max is NaN/inf (one reduction a step)."""
    if not torch.isfinite(scores.amax(-1)).all():
        raise NonFiniteLogits()
    return scores


def generation_kwargs(do_sample: bool, temperature: float = 1.0, top_p: float = 1.0) -> dict:
    """`generate` keywords that sample exactly softmax(logits / T) (nucleus-filtered only when
    top_p < 1), or decode greedily, whatever generation_config the model ships. Both engines use it."""
    sampling = dict(do_sample=True, temperature=temperature, top_p=top_p) if do_sample else \
        dict(do_sample=False, temperature=None, top_p=None)
    return {**NEUTRAL_GENERATION, **sampling}


def encode_prompts(tokenizer, prompts: list[str], max_prompt_tokens: int | None = None):
    """The prompts as one left-padded batch (input_ids, attention_mask), each (G, P); the one place
    both engines tokenize prompts. A prompt over `max_prompt_tokens` is cut on the left: it loses
    its system text first, never the question's end or the assistant header the completion follows."""
    tokenizer.padding_side = "left"
    tokenizer.truncation_side = "left"  # HF's default is "right": it would cut the header off
    enc = tokenizer(prompts, add_special_tokens=False, padding=True, return_tensors="pt",
                    truncation=max_prompt_tokens is not None, max_length=max_prompt_tokens)
    return enc.input_ids, enc.attention_mask


def repeat_prompts(tokenizer, prompts: list[str], n: int, max_prompt_tokens: int | None = None):
    """Each prompt tokenised once, ids and am (G, P), then repeated n times, group-major: rows
    [g*n, (g+1)*n) answer prompt g. Returns ids, am, prompt_ids (B, P), prompt_mask (B, P), group (B,)."""
    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    if not prompts:
        raise ValueError("no prompts given")
    ids, am = encode_prompts(tokenizer, prompts, max_prompt_tokens)
    return ids, am, ids.repeat_interleave(n, dim=0), am.repeat_interleave(n, dim=0), \
        torch.arange(len(prompts)).repeat_interleave(n)


def assemble(tokenizer, prompt_ids, prompt_mask, group, chunks: list[torch.Tensor], eos: list[int], pad: int,
             n: int, seconds: float, meta: dict | None = None) -> Rollouts:
    """One Rollouts from the completion chunks (b_i, c_i) that `generate` returned, in row order."""
    B, C = prompt_ids.shape[0], max(max(c.shape[1] for c in chunks), 1)
    completion_ids = torch.full((B, C), pad, dtype=torch.long)
    completion_mask = torch.zeros((B, C), dtype=torch.long)
    row = 0
    for c in chunks:  # masks per chunk: padding added here to align chunks is never a real token
        completion_ids[row:row + c.shape[0], :c.shape[1]] = c
        completion_mask[row:row + c.shape[0], :c.shape[1]] = completion_mask_from_ids(c, eos)
        row += c.shape[0]
    texts = tokenizer.batch_decode(completion_ids * completion_mask + pad * (1 - completion_mask),
                                   skip_special_tokens=True)
    return Rollouts(prompt_ids, prompt_mask, completion_ids, completion_mask, group, texts, n,
                    seconds, int(completion_mask.sum()), meta or {})


@torch.no_grad()
def generate_rollouts(model, tokenizer, prompts: list[str], n: int, max_new_tokens: int = 256,
                      temperature: float = 0.9, top_p: float = 1.0, batch_size: int = 64,
                      max_prompt_tokens: int | None = None, do_sample: bool = True) -> Rollouts:
    """Sample `n` completions for each prompt string (already chat-formatted, see data.build_prompt);
    do_sample=False decodes greedily (evaluation). batch_size: sequences per `generate` call, which
    bounds memory; greedy completions do not depend on it, sampled ones follow the same distribution
    for any batch_size (not the same draws: the chunks take torch's global RNG in turn).
    max_prompt_tokens: longer prompts are cut on the left (`encode_prompts`; paper: 512)."""
    # each prompt n times, group-major (B = G * n rows): left-padded (B, P) ids and mask, group (B,)
    _, _, prompt_ids, prompt_mask, group = repeat_prompts(tokenizer, prompts, n, max_prompt_tokens)
    B, P = prompt_ids.shape
    device = next(model.parameters()).device
    eos = eos_ids(model, tokenizer)
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else eos[0]
    sampling = generation_kwargs(do_sample, temperature, top_p)

    t0 = time.perf_counter()
    chunks = []
    with generation_mode(model):
        for s in range(0, B, batch_size):
            out = model.generate(input_ids=prompt_ids[s:s + batch_size].to(device),
                                 attention_mask=prompt_mask[s:s + batch_size].to(device),
                                 max_new_tokens=max_new_tokens, pad_token_id=pad, eos_token_id=eos,
                                 logits_processor=[finite_or_raise] if do_sample else None, **sampling)
            chunks.append(out[:, P:].cpu())  # (b, c_chunk): completions only
    if device.type == "cuda":
        torch.cuda.synchronize(device)  # the run's card (--device cuda:1), not the current one
    return assemble(tokenizer, prompt_ids, prompt_mask, group, chunks, eos, pad, n, time.perf_counter() - t0)
