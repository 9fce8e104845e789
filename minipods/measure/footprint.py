"""What a model's weights, adapter, gradients, optimizer and KV cache take, counted from its architecture.

The planner's static part: counts over the real shapes (an offline config built on the meta device),
each following the storage rules of the library that allocates it (bitsandbytes, peft; docs/gpu.md)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

NF4_BLOCK = 64  # bitsandbytes' 4-bit block size on CUDA and CPU (128 on ROCm)
NESTED_BLOCK = 256  # double quantisation: the absmax values are quantised in blocks of 256
NF4_CODE, NESTED_CODE = 16, 256  # float32 entries of the NF4 table and of the nested 8-bit map
ADAM8_BLOCK, ADAM8_MIN_SIZE, ADAM8_QMAP = 256, 4096, 256  # bitsandbytes 8-bit optimizers


@dataclass(frozen=True)
class Arch:
    """The shapes that set a model's memory, from its config (`arch_of`)."""
    layers: int
    hidden: int
    kv_heads: int
    head_dim: int
    vocab: int
    linears: tuple  # (out, in) of every nn.Linear weight inside the decoder layers: quantised, LoRA targets
    other_params: int  # every other parameter: embedding (= tied LM head), norms, biases, an untied head

    @property
    def kv_elements_per_token(self) -> int:
        return 2 * self.layers * self.kv_heads * self.head_dim


def model_config(model: str):
    """The transformers config of a twin id, the offline default (GGUF) or a local HF folder, offline."""
    from transformers import AutoConfig

    from minipods.model import DEFAULT_MODEL, ModelNotFoundError, cache_dir, default_gguf_path
    from minipods.twins.arch import TWIN_CONFIGS, TWIN_PREFIX, UnknownTwinError, parse_twin, twin_config
    if model == DEFAULT_MODEL:
        try:
            gguf = default_gguf_path()
        except ModelNotFoundError as e:
            raise ValueError(str(e)) from None
        done = cache_dir() / f"{gguf.stem}-{gguf.stat().st_size}"  # where model.gguf_to_hf puts it
        if (done / "config.json").is_file():
            return AutoConfig.from_pretrained(done)
        return AutoConfig.from_pretrained(gguf.parent, gguf_file=gguf.name)
    if Path(model).expanduser().is_dir() and (Path(model).expanduser() / "config.json").is_file():
        return AutoConfig.from_pretrained(Path(model).expanduser())
    try:
        hub_id, shrink = parse_twin(model if model.startswith(TWIN_PREFIX) else TWIN_PREFIX + model)
        return twin_config(hub_id, **shrink)
    except UnknownTwinError as e:
        if ":" in model.removeprefix(TWIN_PREFIX):
            raise ValueError(str(e)) from None
    raise ValueError(f"unknown model {model!r}: the planner reads configs offline; known: "
                     f"{', '.join(TWIN_CONFIGS)}, {DEFAULT_MODEL} (or random:<id>[:layers=..], or a local "
                     "folder with config.json)")


def kv_shape(cfg) -> tuple[int, int, int]:
    """(layers, kv heads, head dim) of a transformers config: a cached token holds 2 x their product values."""
    heads = cfg.num_attention_heads
    return (cfg.num_hidden_layers, getattr(cfg, "num_key_value_heads", None) or heads,
            getattr(cfg, "head_dim", None) or cfg.hidden_size // heads)


def arch_of(cfg) -> Arch:
    """Build the model on the meta device (shapes only) and read off what memory depends on."""
    import torch
    from transformers import AutoModelForCausalLM
    with torch.device("meta"):
        model = AutoModelForCausalLM.from_config(cfg)
    decoder = model.get_decoder()
    linears = tuple(tuple(m.weight.shape) for m in decoder.modules() if isinstance(m, torch.nn.Linear))
    in_linears = sum(o * i for o, i in linears)
    total = sum(p.numel() for p in model.parameters())  # tied weights are counted once
    layers, kv_heads, head_dim = kv_shape(cfg)
    return Arch(layers, cfg.hidden_size, kv_heads, head_dim, cfg.vocab_size, linears, total - in_linears)


def nf4_bytes(out_features: int, in_features: int) -> int:
    """Bytes bitsandbytes stores for one NF4 weight with double quantisation: the packed weight, a uint8
    absmax per block of 64, their float32 absmax per 256 blocks and offset, the float32 code tables."""
    n = out_features * in_features
    blocks = math.ceil(n / NF4_BLOCK)
    return (n + 1) // 2 + blocks + 4 * math.ceil(blocks / NESTED_BLOCK) + 4 + 4 * (NF4_CODE + NESTED_CODE)


def weight_bytes(arch: Arch, quantize: str | None) -> dict:
    """{"linear": the decoder's linear weights, "other": the rest} in bytes: NF4 + float32 (4bit) or bf16."""
    if quantize == "4bit":
        return {"linear": sum(nf4_bytes(o, i) for o, i in arch.linears), "other": 4 * arch.other_params}
    return {"linear": 2 * sum(o * i for o, i in arch.linears), "other": 2 * arch.other_params}


def lora_shapes(arch: Arch, r: int) -> list[int]:
    """The element count of every LoRA tensor: A (r x in) and B (out x r) per linear layer."""
    return [n for o, i in arch.linears for n in (r * i, o * r)]


def lora_bytes(arch: Arch, r: int) -> int:
    """The adapter's float32 weights (and, during the update, as much again for their gradients)."""
    return 4 * sum(lora_shapes(arch, r))


def optimizer_bytes(arch: Arch, r: int, kind: str) -> int:
    """AdamW's state for the LoRA parameters: "adamw" (torch: two float32 moments) or "adamw8bit"
    (bitsandbytes: blockwise 8-bit moments for tensors of >= 4096 values)."""
    sizes = lora_shapes(arch, r)
    if kind == "adamw":
        return 8 * sum(sizes)
    if kind != "adamw8bit":
        raise ValueError(f"optimizer must be adamw or adamw8bit, got {kind!r}")
    small = sum(8 * n for n in sizes if n < ADAM8_MIN_SIZE)
    big = sum(2 * n + 2 * 4 * math.ceil(n / ADAM8_BLOCK) for n in sizes if n >= ADAM8_MIN_SIZE)
    return small + big + (2 * 4 * ADAM8_QMAP if big else 0)
