"""A KV cache that grows in place (a lever of the fast rollout engine).

transformers' DynamicLayer appends each step with `torch.cat`, moving 2 * B * h * L * d numbers per layer
and step to store 2 * B * h * d new ones. RoomyLayer allocates room for the whole completion once and
writes each step into it; attention sees the same values, so the outputs are identical."""

from __future__ import annotations

import torch
from transformers import DynamicCache
from transformers.cache_utils import DynamicLayer


class RoomyLayer(DynamicLayer):
    """A DynamicLayer whose keys/values are (B, h, L, d) views of a position-major buffer (capacity,
    B, h, d) with `room` spare positions: the filled part and each step's write are contiguous."""

    def __init__(self, room: int):
        super().__init__()
        self.room = room
        self._k = self._v = None  # (capacity, B, h, d) buffers; self.keys/values view their filled part

    def update(self, key_states: torch.Tensor, value_states: torch.Tensor, *args, **kwargs):
        if not self.is_initialized:
            self.lazy_initialization(key_states, value_states)
        n, t = self.get_seq_length(), key_states.shape[-2]
        if (self._k is None or n + t > self._k.shape[0] or self.keys.shape[0] != key_states.shape[0]
                or (n and self.keys.data_ptr() != self._k.data_ptr())):  # first call, full, or keys replaced
            capacity = n + t + self.room
            self._k = self._grow(self.keys, n, key_states, capacity)
            self._v = self._grow(self.values, n, value_states, capacity)
        self._k[n:n + t].copy_(key_states.permute(2, 0, 1, 3))
        self._v[n:n + t].copy_(value_states.permute(2, 0, 1, 3))
        self.keys = self._k[:n + t].permute(1, 2, 0, 3)  # (B, h, n + t, d) views
        self.values = self._v[:n + t].permute(1, 2, 0, 3)
        return self.keys, self.values

    @staticmethod
    def _grow(old: torch.Tensor, n: int, new: torch.Tensor, capacity: int) -> torch.Tensor:
        B, h, _, d = new.shape
        buf = new.new_empty(capacity, B, h, d)
        if n:
            buf[:n].copy_(old.permute(2, 0, 1, 3))
        return buf


def plain_layers(cache) -> list | None:
    """The layers of a plain DynamicCache; None for other layer kinds (sliding window: the plain paths)."""
    if type(cache) is not DynamicCache or any(type(layer) is not DynamicLayer for layer in cache.layers):
        return None
    return cache.layers


def roomy_cache(kv: list[tuple[torch.Tensor, torch.Tensor]] | None, room: int,
                index: torch.Tensor | None = None) -> DynamicCache:
    """A DynamicCache of RoomyLayers holding `kv` ((G, h, L, d) keys, values per layer; rows `index` (B,)
    of them when given) or empty; `room`: positions beyond that (the completion length)."""
    cache = DynamicCache()
    cache.layer_class_to_replicate = lambda: RoomyLayer(room)
    for k, v in kv or []:
        cache.layers.append(RoomyLayer(room))
        cache.layers[-1].update(k if index is None else k[index], v if index is None else v[index])
    return cache
