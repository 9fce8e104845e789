"""Sampling by inverse CDF, as a `generate` logits processor (a lever of the fast rollout engine).

`torch.multinomial` (HF's `do_sample=True`) costs more than a small model's decode step on a CPU; one uniform
per row and step, inverting the cumulative softmax, samples the same distribution from torch's global RNG
(the state checkpoints save), so seeded runs reproduce and resume exactly.
"""

from __future__ import annotations

import torch

from minipods.rollouts import finite_or_raise


def sample_inverse_cdf(weights: torch.Tensor, u: torch.Tensor, block: int = 128) -> torch.Tensor:
    """(B,) token ids drawn from the rows of `weights` (B, V), unnormalised and >= 0, with uniforms u (B,)
    in [0, 1): the first index whose cumulative weight exceeds u_b * total_b (a zero-weight token never).
    Two levels keep it cheap and accurate: float64 cumulative sums of blocks of `block` tokens pick the
    block, then a cumulative sum inside that block picks the token."""
    B, V = weights.shape
    nb = -(-V // block)
    w = weights if nb * block == V else torch.nn.functional.pad(weights, (0, nb * block - V))
    w = w.view(B, nb, block)  # (B, nb, block)
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
    """Draws from softmax(scores / T), nucleus-filtered by HF's TopPLogitsWarper when top_p < 1; returns 0
    at the drawn token and -inf elsewhere, so `generate` runs greedy (do_sample=False) over it."""

    def __init__(self, temperature: float = 1.0, top_p: float = 1.0):
        from transformers import TopPLogitsWarper

        self.temperature = temperature
        self.top_p = TopPLogitsWarper(top_p) if top_p < 1.0 else None

    def __call__(self, input_ids: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
        scores = scores.float() / self.temperature  # (B, V), a new tensor: ours to overwrite
        finite_or_raise(input_ids, scores)  # NaN/inf: float16 overflowed; stop before sampling garbage
        if self.top_p is not None:
            scores = self.top_p(input_ids, scores)
        weights = scores.sub_(scores.amax(-1, keepdim=True)).exp_()  # unnormalised softmax, in place
        u = torch.rand(scores.shape[0], dtype=torch.float64, device=scores.device)
        tok = sample_inverse_cdf(weights, u)  # (B,)
        return weights.fill_(-float("inf")).scatter_(1, tok[:, None], 0.0)
