"""The inference copy of the policy, which rollouts are sampled from (the paper's inference phase, Section 3).

RL systems (TRL with vLLM, verl) sample from an engine holding its own copy of the policy's weights,
refreshed after every update; this is that copy in plain transformers. Why: folding the LoRA adapter into
the weight (W + scale * B @ A) makes each adapted projection one matmul per decode step, not three; folding
in place and out again would drift bf16 weights, so the policy's tensors are only read. Not for 4-bit
models (`can_fold`): their copy would cost the memory 4 bits saved."""

from __future__ import annotations

from types import SimpleNamespace

import torch

_FOLD_ATTR = "_minipods_folded"


def native_bf16_cpu() -> bool:
    """Native bf16 matmuls (AVX512-BF16 / AMX)? Without them a bf16 GEMM is several times slower than fp32."""
    try:
        return bool(torch.ops.mkldnn._is_mkldnn_bf16_supported())
    except (AttributeError, RuntimeError):
        return False


class UpcastLinear(torch.nn.Module):
    """x @ W.T + b in float32 (W: float32 copies of bf16/fp16 values), returned in x's dtype: a bf16 GEMM's
    math with float32 accumulation on the fast float32 kernel, at twice the weight's storage."""

    def __init__(self, weight: torch.Tensor, bias: torch.Tensor | None = None):
        super().__init__()
        self.register_buffer("weight", weight.detach().float(), persistent=False)  # (out, in)
        self.register_buffer("bias", None if bias is None else bias.detach().float(), persistent=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.linear(x.float(), self.weight, self.bias).to(x.dtype)


def onednn_linear_available() -> bool:
    """Whether torch has oneDNN's packed-weight linear (CPU builds with MKLDNN, the default)."""
    return torch.backends.mkldnn.is_available() and hasattr(torch.ops.mkldnn, "_linear_pointwise")


class PackedLinear(torch.nn.Module):
    """UpcastLinear's math by oneDNN on a weight packed once per refresh (torch.compile's CPU prepacking):
    faster at a decode step's few rows; equal to F.linear to float32 rounding (another summation order)."""

    def __init__(self, weight: torch.Tensor, bias: torch.Tensor | None = None):
        super().__init__()
        self.out_features, self.in_features = weight.shape
        self.register_buffer("bias", None if bias is None else bias.detach().float(), persistent=False)
        self.load_(weight)

    @torch.no_grad()
    def load_(self, weight: torch.Tensor) -> None:
        """Pack (out, in) `weight` (any float dtype; its values are kept exactly in float32)."""
        self.packed = torch.ops.mkldnn._reorder_linear_weight(weight.detach().float().contiguous())

    @property
    def weight(self) -> torch.Tensor:  # opaque oneDNN tensor: shape, dtype and size only
        return self.packed

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.ops.mkldnn._linear_pointwise(x.float(), self.packed, self.bias, "none", [], "").to(x.dtype)


class PackedGroup:
    """Sibling projections of one input (q/k/v, gate/up) as one PackedLinear over their stacked weights: the
    first sibling called on an input runs the matmul, the others take their slice of its output."""

    def __init__(self, sizes: list[int], bias: torch.Tensor | None):
        self.sizes, self.bias, self.staged = sizes, bias, {}
        self.linear: PackedLinear | None = None  # built at the first complete load
        self._x = self._parts = None  # the input last multiplied and its per-sibling slices
        self._served: set[int] = set()

    def load_(self, i: int, weight: torch.Tensor) -> None:
        """Sibling i's (out, in) weight; the group repacks once every sibling's is in (a refresh)."""
        self.staged[i] = weight
        if len(self.staged) == len(self.sizes):
            w = torch.cat([self.staged.pop(j).float() for j in range(len(self.sizes))])  # (sum of outs, in)
            if self.linear is None:
                self.linear = PackedLinear(w, self.bias)
            else:
                self.linear.load_(w)

    def output(self, x: torch.Tensor, i: int) -> torch.Tensor:
        if self._x is not x or i in self._served:  # a new input: one matmul serves every sibling
            self._x, self._parts, self._served = x, self.linear(x).split(self.sizes, -1), set()
        self._served.add(i)
        part = self._parts[i]
        if len(self._served) == len(self.sizes):
            self._x = self._parts = None  # every sibling served: hold no tensor between calls
        return part


class PackedSibling(PackedLinear):
    """One projection of a PackedGroup: a PackedLinear to callers, whose weight lives in the group's."""

    def __init__(self, group: PackedGroup, i: int, out_features: int, in_features: int):
        torch.nn.Module.__init__(self)  # not PackedLinear's: the group holds the packed weight
        self.group, self.i, self.out_features, self.in_features = group, i, out_features, in_features
        self.register_buffer("bias", None, persistent=False)  # in the group's

    def load_(self, weight: torch.Tensor) -> None:
        self.group.load_(self.i, weight)

    @property
    def weight(self) -> torch.Tensor:
        return self.group.linear.weight

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.group.output(x, self.i)


SIBLINGS = (("q_proj", "k_proj", "v_proj"), ("gate_proj", "up_proj"))


@torch.no_grad()
def _fuse_siblings(copy, pairs: list[tuple]) -> list[tuple]:
    """Each set of SIBLINGS in `copy` (all PackedLinear, one input size) as one PackedGroup; `pairs` updated."""
    swap = {}
    for mod in copy.modules():
        for names in SIBLINGS:
            lins = [getattr(mod, n, None) for n in names]
            if (not all(type(m) is PackedLinear for m in lins) or len({m.in_features for m in lins}) > 1
                    or len({m.bias is None for m in lins}) > 1):
                continue
            bias = None if lins[0].bias is None else torch.cat([m.bias for m in lins])
            group = PackedGroup([m.out_features for m in lins], bias)
            for i, (n, m) in enumerate(zip(names, lins)):
                swap[m] = PackedSibling(group, i, m.out_features, m.in_features)  # filled by the refresh
                setattr(mod, n, swap[m])
    return [(m, src, swap.get(dst, dst)) for m, src, dst in pairs]


def _decode_attention(module, query, key, value, attention_mask, scaling: float | None = None):
    """A decode step's attention (one query per row) as two small matmuls, the Hq / Hk query heads sharing
    a KV head taken as query rows (no repeated keys); faster than the CPU's flash kernel at these shapes.
    Returns (B, 1, Hq, d), as transformers' attention functions do."""
    (B, Hq, _, d), Hk = query.shape, key.shape[1]
    q = query.reshape(B, Hk, Hq // Hk, d)  # (B, Hk, g, d): query heads grouped by their KV head
    s = torch.matmul(q, key.transpose(-1, -2)) * (scaling if scaling is not None else d ** -0.5)  # (B, Hk, g, L)
    if attention_mask is not None:  # (B, 1, 1, L): bool (True = attend) or additive
        s = s.masked_fill(~attention_mask, float("-inf")) if attention_mask.dtype == torch.bool else s + attention_mask
    out = torch.matmul(s.softmax(-1), value)  # (B, Hk, g, d)
    return out.reshape(B, Hq, 1, d).transpose(1, 2).contiguous()


def _copy_attention(module, query, key, value, attention_mask, **kwargs):
    """SDPA attention on exact float32 upcasts of q, k, v (decode steps: _decode_attention), in q's dtype."""
    from transformers.integrations.sdpa_attention import sdpa_attention_forward
    dtype, query, key, value = query.dtype, query.float(), key.float(), value.float()
    if attention_mask is not None and attention_mask.is_floating_point():
        attention_mask = attention_mask.float()
    plain = kwargs.get("dropout", 0.0) == 0.0 and kwargs.get("softcap") is None and kwargs.get("position_bias") is None
    if query.shape[2] == 1 and plain and key.shape[1] and query.shape[1] % key.shape[1] == 0 and (
            attention_mask is None or attention_mask.shape[1:3] == (1, 1)):
        out = _decode_attention(module, query, key, value, attention_mask, kwargs.get("scaling"))
    else:
        out, _ = sdpa_attention_forward(module, query, key, value, attention_mask, **kwargs)
    return out.to(dtype), None


def _foldable_lora_layers(model) -> list[tuple[str, object]] | None:
    """(name, peft LoRA layer) pairs whose adapter folds exactly into nn.Linear weights; None when folding
    does not apply (no adapter, 4/8-bit base layers, DoRA or other variants, LoRA bias, disabled or merged)."""
    if not hasattr(model, "get_base_model"):
        return None
    layers = [(n, m) for n, m in model.get_base_model().named_modules() if hasattr(m, "lora_A") and hasattr(m, "base_layer")]
    if not layers:
        return None
    for _, m in layers:
        active = [a for a in m.active_adapters if a in m.lora_A]
        if (type(m.base_layer) is not torch.nn.Linear or m.merged or m.disable_adapters or getattr(m, "fan_in_fan_out", False)
                or any(a in getattr(m, "lora_variant", {}) or m.lora_bias.get(a, False) for a in active)):
            return None
    return layers


def can_fold(model) -> bool:
    return _foldable_lora_layers(model) is not None


def _fold(m) -> torch.Tensor:
    """(out, in) float32: W + sum over active adapters of scale * B @ A (never the weight itself)."""
    w = m.base_layer.weight.to(torch.float32, copy=True)
    for a in m.active_adapters:
        if a in m.lora_A:
            w.addmm_(m.lora_B[a].weight.float(), m.lora_A[a].weight.float(), alpha=m.scaling[a])
    return w


def _build_copy(model, layers, upcast: bool, pack: bool, fuse: bool) -> SimpleNamespace:
    """The base model deep-copied, sharing every tensor but the adapted linears' (and the head's, if upcast/packed)."""
    import copy as _copy
    base, folded_ids = model.get_base_model(), {id(m.base_layer.weight) for _, m in layers}
    # deepcopy with a memo that maps every other tensor to itself: those are shared, not copied
    memo = {id(t): t for t in list(base.parameters()) + list(base.buffers()) if id(t) not in folded_ids}
    cp = _copy.deepcopy(base, memo)
    pairs = []  # (peft LoRA layer or None, source weight, the copy's module)
    for name, m in layers:
        parent, _, child = name.rpartition(".")
        lin = cp.get_submodule(name).base_layer  # the copy's own nn.Linear (fresh weight tensor)
        if pack or upcast:
            lin = (PackedLinear if pack else UpcastLinear)(lin.weight, lin.bias)
        setattr(cp.get_submodule(parent) if parent else cp, child, lin)
        pairs.append((m, m.base_layer.weight, lin))
    head = cp.get_output_embeddings()
    if (pack or upcast) and type(head) is torch.nn.Linear:  # a large share of a small model's decode FLOPs
        up = (PackedLinear if pack else UpcastLinear)(head.weight, head.bias)
        cp.set_output_embeddings(up)
        pairs.append((None, base.get_output_embeddings().weight, up))
    if pack and fuse:
        pairs = _fuse_siblings(cp, pairs)
    if (upcast or pack) and getattr(cp.config, "_attn_implementation", None) == "sdpa":  # the copy's config is its own
        from transformers import AttentionInterface
        from transformers.masking_utils import ALL_MASK_ATTENTION_FUNCTIONS, sdpa_mask
        AttentionInterface.register("minipods_copy_attention", _copy_attention)
        ALL_MASK_ATTENTION_FUNCTIONS.register("minipods_copy_attention", sdpa_mask)  # the masks SDPA takes
        cp.set_attn_implementation("minipods_copy_attention")
    cp.eval()
    # a plain object, not a submodule of the policy: the copy stays out of its parameters(), state_dict()
    return SimpleNamespace(copy=cp, pairs=pairs, upcast=upcast, pack=pack, fuse=fuse)


@torch.no_grad()
def folded_copy(model, upcast: bool | None = None, pack: bool | None = None, fuse: bool = True):
    """The policy with its LoRA adapter folded in (W + scale * B @ A in float32, rounded once to the
    policy's dtype), a separate eval-mode model cached on `model` and refreshed on every call; None where
    folding does not apply. upcast (None = bf16/fp16 on a CPU without native bf16): UpcastLinear and float32
    attention; pack (None = CPU with oneDNN, float32 math): PackedLinear; fuse: PackedGroups (with pack)."""
    layers = _foldable_lora_layers(model)
    if layers is None:
        return None
    w0 = layers[0][1].base_layer.weight
    if upcast is None:
        upcast = w0.device.type == "cpu" and w0.dtype in (torch.bfloat16, torch.float16) and not native_bf16_cpu()
    if pack is None:
        pack = w0.device.type == "cpu" and (upcast or w0.dtype == torch.float32) and onednn_linear_available()
    held = model.__dict__.get(_FOLD_ATTR)
    if (held is None or (held.upcast, held.pack, held.fuse) != (upcast, pack, fuse) or held.copy.device != w0.device
            or len(held.pairs) < len(layers)):
        held = _build_copy(model, layers, upcast, pack, fuse)
        model.__dict__[_FOLD_ATTR] = held  # plain attribute (see _build_copy)
    for m, src, dst in held.pairs:  # refresh: cheap next to a rollout phase
        w = (src.float() if m is None else _fold(m)).to(src.dtype)  # one rounding to the policy's dtype
        if isinstance(dst, PackedLinear):
            dst.load_(w)
        else:
            dst.weight.copy_(w)  # (exact upcast if float32)
    return held.copy
