"""The planner's measured terms: what a phase holds beyond its weights, and how the parts combine.

Measured, never derived by hand (scripts/measure_terms.py: shallow twins on a CPU, memory.py's exact
meters). Per row of R tokens each term is a R + b R^2 (R^2: the mask's pairs), saved activations again
per layer. The update peaks at saved + the larger of the working set and the log-prob buffer (never alive
at once); generation at the larger of the shared prefill and the last decode step, which peaks inside a
layer (one layer's prompt keys/values copied to the rows) or at the LM head's logits."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

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

# The known models' terms, data/terms.json: model -> what `python -m minipods.plan --terms FILE` reads (per
# base precision: UpdateTerms without/with gradient checkpointing, GenTerms), written by `python
# scripts/measure_terms.py --check-layers 4 --store` (1 CPU thread, torch 2.13, transformers 5.23, bf16
# compute, LoRA r=64; every term within 2.8% of the 4-layer check).
STORED_FILE = Path(__file__).parent / "data" / "terms.json"
STORED: dict[str, dict] = json.loads(STORED_FILE.read_text())


def stored_terms(model: str, quantize: str, ckpt: bool):
    """(UpdateTerms, GenTerms) held for a known model, or None."""
    t = STORED.get(model, {}).get(quantize)
    return (UpdateTerms(**t["update"][str(ckpt)]), GenTerms(**t["gen"])) if t else None


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
    saved, work = terms.saved(layers, rows, tokens), terms.working(rows, tokens)
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
