"""The planner's measured terms: what a phase holds beyond its weights, and how the parts combine.

Measured, never derived by hand (scripts/measure_terms.py: shallow twins on a CPU, memory.py's exact
meters). Per row of R tokens each term is a R + b R^2 (R^2: the mask's pairs), saved activations again
per layer. The update peaks at saved + the larger of the working set and the log-prob buffer (never alive
at once); generation at the larger of the shared prefill and the last decode step, which peaks inside a
layer (one layer's prompt keys/values copied to the rows) or at the LM head's logits.
"""

from __future__ import annotations

from dataclasses import dataclass

LORA_R = 64  # both GPU presets (paper, consumer): the measured terms include the adapter's activations


@dataclass(frozen=True)
class UpdateTerms:
    """Bytes of one micro-batch's activations, per row of R tokens (see the module docstring)."""
    tok: float
    tok_layer: float
    pair: float
    pair_layer: float
    work_0: float
    work_tok: float
    work_pair: float

    def saved(self, layers: int, rows: int, tokens: int) -> float:
        return rows * (tokens * (self.tok + layers * self.tok_layer) + tokens ** 2 * (self.pair + layers * self.pair_layer))

    def working(self, rows: int, tokens: int) -> float:
        return self.work_0 + rows * (tokens * self.work_tok + tokens ** 2 * self.work_pair)


@dataclass(frozen=True)
class GenTerms:
    """The generation phase's measured terms (bytes; kv_element_bytes: the cache's dtype)."""
    kv_element_bytes: int
    prefill_0: float
    prefill_tok: float
    prefill_pair: float
    decode_0: float

    def prefill(self, prompts: int, tokens: int) -> float:
        return self.prefill_0 + prompts * (tokens * self.prefill_tok + tokens ** 2 * self.prefill_pair)


# float32 (chunk x vocab) tensors alive at once in a log-prob chunk's backward, and (rows x vocab) ones per
# decode step, by base precision (`python scripts/measure_terms.py --buffers`: 16,384-token vocabulary).
LOGPROB_BUFFERS = {"4bit": 4.02, "none": 4.01}
DECODE_BUFFERS = {"4bit": 6.02, "none": 5.52}
# The optimizer step's temporaries, in copies of all LoRA weights (torch AdamW, foreach) or of the largest
# LoRA tensor (bitsandbytes 8-bit on a CPU; its CUDA kernel allocates none: an upper bound there).
OPTIMIZER_STEP_BUFFERS = {"adamw": 1.0, "adamw8bit": 5.0}

# The known models' terms from `python scripts/measure_terms.py --check-layers 4` (1 CPU thread, torch 2.13,
# transformers 5.23, bf16 compute, LoRA r=64; every term within 2.8% of the 4-layer check). Keys:
# (model, quantize, gradient checkpointing) -> UpdateTerms' fields; (model, quantize) -> GenTerms' fields.
STORED_UPDATE: dict[tuple, tuple] = {
    ('Qwen/Qwen2.5-0.5B-Instruct', '4bit', False): (2084, 108352, 0, 4, 9.12084e+06, 9968, 1),
    ('Qwen/Qwen2.5-0.5B-Instruct', '4bit', True): (5160, 3584, 0, 0, 9.13354e+06, 118818, 5),
    ('Qwen/Qwen2.5-0.5B-Instruct', 'none', False): (1044, 86336, 0, 2, 76, 40576, 1),
    ('Qwen/Qwen2.5-0.5B-Instruct', 'none', True): (4376, 1792, 0, 0, 12772, 131634, 3),
    ('Qwen/Qwen2.5-1.5B-Instruct', '4bit', False): (3716, 194360, 0, 4, 2.85175e+07, 18320, 1),
    ('Qwen/Qwen2.5-1.5B-Instruct', '4bit', True): (8840, 6144, 0, 0, 2.85348e+07, 213599, 5.57031),
    ('Qwen/Qwen2.5-1.5B-Instruct', 'none', False): (1860, 152888, 0, 2, 76, 74704, 1),
    ('Qwen/Qwen2.5-1.5B-Instruct', 'none', True): (7496, 3072, 0, 0, 12772, 235770, 3),
    ('Qwen/Qwen2.5-3B-Instruct', '4bit', False): (4612, 243528, 0, 4, 4.663e+07, 22544, 1),
    ('Qwen/Qwen2.5-3B-Instruct', '4bit', True): (11784, 8192, 0, 0, 4.66427e+07, 267082, 5),
    ('Qwen/Qwen2.5-3B-Instruct', 'none', False): (2308, 193864, 0, 2, 76, 92176, 1),
    ('Qwen/Qwen2.5-3B-Instruct', 'none', True): (9992, 4096, 0, 0, 12772, 296778, 3),
    ('smollm2-135m-instruct', '4bit', False): (1524, 44844, 0, 4, 1.95814e+06, 3203.94, 1.29232),
    ('smollm2-135m-instruct', '4bit', True): (3320, 2304, 0, 0, 1.96964e+06, 48574, 5),
    ('smollm2-135m-instruct', 'none', False): (764, 40236, 0, 2, 76, 13272, 1),
    ('smollm2-135m-instruct', 'none', True): (2816, 1152, 0, 0, 12772, 56630, 3),
}
STORED_GEN: dict[tuple, tuple] = {
    ('Qwen/Qwen2.5-0.5B-Instruct', '4bit'): (4, 9.12078e+06, 44296, 1, 9.38683e+06),
    ('Qwen/Qwen2.5-0.5B-Instruct', 'none'): (2, 16, 87944, 1, 678736),
    ('Qwen/Qwen2.5-1.5B-Instruct', '4bit'): (4, 2.85174e+07, 79624, 1, 2.89391e+07),
    ('Qwen/Qwen2.5-1.5B-Instruct', 'none'): (2, 16, 160776, 1, 1.1979e+06),
    ('Qwen/Qwen2.5-3B-Instruct', '4bit'): (4, 4.66299e+07, 100104, 1, 4.72154e+07),
    ('Qwen/Qwen2.5-3B-Instruct', 'none'): (2, 16, 199176, 1, 1.5051e+06),
    ('smollm2-135m-instruct', '4bit'): (4, 1.95688e+06, 19208, 1, 1.95874e+06),
    ('smollm2-135m-instruct', 'none'): (2, 16, 31176, 1, 192848),
}


def stored_terms(model: str, quantize: str, ckpt: bool):
    """(UpdateTerms, GenTerms) held for a known model, or None."""
    u, g = STORED_UPDATE.get((model, quantize, ckpt)), STORED_GEN.get((model, quantize))
    return (UpdateTerms(*u), GenTerms(*g)) if u and g else None


def decode_cache_bytes(per_token: int, layers: int, prompts: int, rows: int, prompt_tokens: int,
                       new_tokens: int) -> dict:
    """Generation's KV cache: each prompt's shared prefill, the rows' own at full length (allocated up front;
    the last token is never fed back), and one layer's prompt keys/values copied to the rows (roomy_cache)."""
    rows_kv = per_token * rows * (prompt_tokens + new_tokens - 1)
    return {"prefill": per_token * prompts * (prompt_tokens - 1), "rows": rows_kv,
            "growth": per_token * rows * (prompt_tokens - 1) / layers}


def decode_buffers(quantize: str | None) -> float:
    return DECODE_BUFFERS["4bit" if quantize == "4bit" else "none"]


def logprob_buffers(quantize: str | None) -> float:
    return LOGPROB_BUFFERS["4bit" if quantize == "4bit" else "none"]


def predict_update(terms: UpdateTerms, layers: int, rows: int, tokens: int, completion_tokens: int, vocab: int,
                   quantize: str | None, chunk: int = 512) -> dict:
    """A micro-batch's saved activations, working set and log-prob buffer, and its peak above the weights."""
    saved = terms.saved(layers, rows, tokens)
    work = terms.working(rows, tokens)
    logprob = logprob_buffers(quantize) * min(chunk, completion_tokens) * vocab * 4
    return {"saved": saved, "working": work, "logprob": logprob, "peak": saved + max(work, logprob)}


def predict_decode(terms: GenTerms, per_token: int, layers: int, prompts: int, rows: int, prompt_tokens: int,
                   new_tokens: int, vocab: int, quantize: str | None) -> dict:
    """The generation phase's two moments above the weights: the shared prefill, and the last decode step."""
    cache = decode_cache_bytes(per_token, layers, prompts, rows, prompt_tokens, new_tokens)
    logits = decode_buffers(quantize) * rows * vocab * 4
    prefill = cache["prefill"] + terms.prefill(prompts, prompt_tokens - 1)
    decode = cache["prefill"] + cache["rows"] + max(cache["growth"] + terms.decode_0, logits)
    return {**cache, "logits": logits, "decode_0": terms.decode_0, "prefill_moment": prefill,
            "decode_moment": decode, "peak": max(prefill, decode)}
