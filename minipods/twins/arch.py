"""Architecture twins (`--model random:<hub id>`): a known hub architecture with seeded random weights and a
byte-level tokenizer, built offline, to measure the paper's Qwen2.5-3B recipe (memory, speed) with no hub access."""

from __future__ import annotations

import os
from pathlib import Path

import torch

from minipods.model import MODEL_SOURCES, build_folder

TWIN_PREFIX = "random:"
# Fields of the public config.json files (https://huggingface.co/<id>/blob/main/config.json), sizes aside.
_QWEN25 = dict(architectures=["Qwen2ForCausalLM"], model_type="qwen2", attention_dropout=0.0, bos_token_id=151643,
               eos_token_id=151645, hidden_act="silu", initializer_range=0.02, max_position_embeddings=32768,
               num_key_value_heads=2, rms_norm_eps=1e-6, rope_theta=1000000.0, sliding_window=32768,
               tie_word_embeddings=True, use_cache=True, use_sliding_window=False, vocab_size=151936)
TWIN_CONFIGS = {
    "Qwen/Qwen2.5-0.5B-Instruct": {**_QWEN25, "hidden_size": 896, "intermediate_size": 4864,
                                   "num_hidden_layers": 24, "num_attention_heads": 14, "max_window_layers": 21},
    "Qwen/Qwen2.5-1.5B-Instruct": {**_QWEN25, "hidden_size": 1536, "intermediate_size": 8960,
                                   "num_hidden_layers": 28, "num_attention_heads": 12, "max_window_layers": 21},
    "Qwen/Qwen2.5-3B-Instruct": {**_QWEN25, "hidden_size": 2048, "intermediate_size": 11008,
                                 "num_hidden_layers": 36, "num_attention_heads": 16, "max_window_layers": 70},
}
# `shrink` keys (short name -> config field): a smaller network of the same family, for tests.
SHRINK_KEYS = {"layers": "num_hidden_layers", "hidden": "hidden_size", "intermediate": "intermediate_size",
               "heads": "num_attention_heads", "kv_heads": "num_key_value_heads", "vocab": "vocab_size"}
TWIN_SEED = 0  # a twin's weights are seeded: every run and process builds the same network
TWIN_SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]  # ids 256, 257, 258 (pad, -, eos)
TWIN_CHAT_TEMPLATE = (  # Qwen2.5's ChatML layout, without its default system prompt
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")


class UnknownTwinError(ValueError):
    pass


def _known(hub_id: str) -> str:
    """`hub_id` without the random: prefix; UnknownTwinError unless a twin of it is kept here."""
    hub_id = hub_id.removeprefix(TWIN_PREFIX)
    if hub_id not in TWIN_CONFIGS:
        raise UnknownTwinError(f"unknown twin {hub_id!r}; known: {', '.join(TWIN_CONFIGS)}")
    return hub_id


def parse_twin(spec: str) -> tuple[str, dict]:
    """'random:<hub id>[:layers=2,hidden=64,...]' -> (hub id, shrink)."""
    hub_id, _, opts = spec.removeprefix(TWIN_PREFIX).partition(":")
    shrink = {}
    for kv in filter(None, opts.split(",")):
        k, _, v = kv.partition("=")
        if k not in SHRINK_KEYS or not v.isdigit() or int(v) < 1:
            raise UnknownTwinError(f"bad twin option {kv!r} in {spec!r}; expected KEY=N with KEY in "
                                   f"{', '.join(SHRINK_KEYS)}")
        shrink[k] = int(v)
    return _known(hub_id), shrink


def twin_config(hub_id: str, **shrink):
    """The transformers config of a known hub architecture; `shrink` (SHRINK_KEYS) makes it smaller."""
    from transformers import AutoConfig
    hub_id = _known(hub_id)
    if bad := sorted(set(shrink) - set(SHRINK_KEYS)):
        raise UnknownTwinError(f"unknown shrink key(s) {bad}; expected some of {', '.join(SHRINK_KEYS)}")
    values = {k: v for k, v in TWIN_CONFIGS[hub_id].items() if k != "model_type"}
    values.update({SHRINK_KEYS[k]: v for k, v in shrink.items()})
    for k in ("bos_token_id", "eos_token_id"):  # a shrunk vocabulary may not hold the real special ids
        if values[k] >= values["vocab_size"]:
            values[k] = None
    return AutoConfig.for_model(TWIN_CONFIGS[hub_id]["model_type"], **values)


def twin_tokenizer():
    """Byte-level: token id = byte value (0-255), then the ChatML specials 256-258; ids >= 259 decode to nothing."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast
    from transformers.convert_slow_tokenizer import bytes_to_unicode  # GPT-2's byte -> character map
    b2u = bytes_to_unicode()
    vocab = {b2u[b]: b for b in range(256)} | {t: 256 + i for i, t in enumerate(TWIN_SPECIALS)}
    tk = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    tk.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    tk.decoder = decoders.ByteLevel()
    tok = PreTrainedTokenizerFast(tokenizer_object=tk, pad_token=TWIN_SPECIALS[0], eos_token=TWIN_SPECIALS[2],
                                  additional_special_tokens=TWIN_SPECIALS[1:2], padding_side="left")
    tok.chat_template = TWIN_CHAT_TEMPLATE
    return tok


def build_twin(spec: str, device: str | None = None, dtype: torch.dtype = torch.bfloat16):
    """(model, tokenizer): the twin with seeded random weights, built on `device` in `dtype` (no LoRA)."""
    from transformers import AutoModelForCausalLM
    hub_id, shrink = parse_twin(spec)
    tok, cfg = twin_tokenizer(), twin_config(hub_id, **shrink)
    # the twin's tokenizer ids (the real ones, 151643/151645, are not in a byte-level vocabulary)
    cfg.bos_token_id, cfg.eos_token_id, cfg.pad_token_id = None, tok.eos_token_id, tok.pad_token_id
    if cfg.vocab_size < len(tok):
        raise UnknownTwinError(f"a twin's vocab must hold its tokenizer's {len(tok)} ids, got {cfg.vocab_size}")
    dev = torch.device(device if device not in (None, "auto") else "cuda" if torch.cuda.is_available() else "cpu")
    if dev.type == "cuda" and dev.index is None:
        dev = torch.device("cuda", torch.cuda.current_device())
    # seeded, leaving the caller's RNG as it was (a run must not depend on whether the twin was cached)
    with torch.random.fork_rng(devices=[dev.index] if dev.type == "cuda" else []), dev:
        torch.manual_seed(TWIN_SEED)
        model = AutoModelForCausalLM.from_config(cfg, dtype=dtype)  # generation_config: cfg's pad and eos
    return model, tok


def twin_folder(spec: str, root: str | os.PathLike, device: str | None = None) -> Path:
    """The twin as an HF folder under `root`, built once (on `device`), so `from_pretrained` opens it."""
    hub_id, shrink = parse_twin(spec)
    name = hub_id.replace("/", "--") + "".join(f"-{k}{v}" for k, v in sorted(shrink.items()))
    def fill(tmp: Path) -> None:
        model, tok = build_twin(spec, device)
        model.save_pretrained(tmp)
        tok.save_pretrained(tmp)
        on = next(model.parameters()).device
        del model
        if on.type == "cuda":  # built there, but not part of any measurement: forget its memory and peak
            torch.cuda.empty_cache()
            torch.cuda.reset_peak_memory_stats(on)
    return build_folder(Path(root) / f"{name}-seed{TWIN_SEED}", fill)


# `--model random:<hub id>`: model.resolve_model builds it under MINIPODS_CACHE/twins
MODEL_SOURCES[TWIN_PREFIX] = lambda spec, cache, device: twin_folder(spec, cache / "twins", device)
