"""The shared-prompt update pass: `minipods.grpo.rollout_logprobs`'s contract, with less work.

The m kept rows of one prompt share its tokens, so the backbone runs each distinct prompt of a micro-batch
once and its rows' completions attend to that pass (keys/values expanded to the rows with autograd: the
gradient flows back exactly as through m copies). Micro-batches are as in the plain update. One pass per
row under gradient checkpointing (transformers drops the KV cache there) or where the cache is not plain."""

from __future__ import annotations

import torch

from minipods.fast.cache import plain_layers
from minipods.grpo import backbone_and_head, grpo_update, logprobs_from_states, rollout_logprobs
from minipods.model import gradient_checkpointing_on
from minipods.rollouts import Rollouts, positions_from_mask


def shared_prompt_states(model, mb: Rollouts) -> torch.Tensor | None:
    """(B, C, H) hidden states predicting the completion tokens, each distinct prompt run once; None: not here."""
    from transformers import DynamicCache
    backbone, _ = backbone_and_head(model)
    device = next(model.parameters()).device
    ids = torch.cat([mb.prompt_ids, mb.completion_ids], 1).to(device)  # (B, L) L = P + C
    am = torch.cat([mb.prompt_mask, mb.completion_mask], 1).to(device)  # (B, L)
    pos, P, group = positions_from_mask(am), mb.prompt_ids.shape[1], mb.group.to(device)
    uniq, inv = torch.unique(group, return_inverse=True)  # inv (B,): row -> its distinct prompt
    if len(uniq) == len(group) or P < 1:
        return None  # one row per prompt: nothing to share
    first = torch.stack([(group == g).nonzero()[0, 0] for g in uniq])  # (G,) one row per prompt
    if not torch.equal(ids[:, :P], ids[first][inv, :P]) or not torch.equal(am[:, :P], am[first][inv, :P]):
        return None
    out = backbone(input_ids=ids[first, :P], attention_mask=am[first, :P], position_ids=pos[first, :P],
                   use_cache=True)  # (G, P, H): each prompt once
    layers = plain_layers(out.past_key_values)
    if layers is None:
        return None
    # each row continues from its prompt's keys/values. index_select, not keys[inv]: advanced indexing's
    # backward (index_put_ with accumulate) adds one prompt's rows in a thread-timing-dependent order on a
    # multi-threaded CPU (seeded runs parted in the last bits); index_add_ adds them in a fixed order.
    rows = DynamicCache(ddp_cache_data=[(layer.keys.index_select(0, inv), layer.values.index_select(0, inv))
                                        for layer in layers])
    h_c = backbone(input_ids=ids[:, P:], attention_mask=am, position_ids=pos[:, P:], past_key_values=rows,
                   use_cache=True).last_hidden_state  # (B, C, H)
    h_last = out.last_hidden_state[:, -1].index_select(0, inv)  # (B, H): the last prompt position predicts token 0
    return torch.cat([h_last[:, None], h_c[:, :-1]], 1)


def shared_logprobs(model, mb: Rollouts, temperature: float = 1.0, chunk_tokens: int = 512) -> torch.Tensor:
    """(B, C) completion log-probs, each distinct prompt run once (grpo_update's `logprob_fn`)."""
    h = None if torch.is_grad_enabled() and gradient_checkpointing_on(model) else shared_prompt_states(model, mb)
    if h is None:
        return rollout_logprobs(model, mb, temperature, chunk_tokens)
    return logprobs_from_states(model, h, mb.completion_ids, mb.completion_mask, temperature, chunk_tokens)


def update_pricing(fast: bool, skip_silent: bool, beta: float) -> str:
    """What update_s paid for: "skip_silent" (advantage-0 rows left out: this update at beta 0) or "every_row"."""
    return "skip_silent" if fast and skip_silent and beta == 0 else "every_row"


def fast_grpo_update(model, optimizer, batch: Rollouts, advantages: torch.Tensor, beta: float = 0.0,
                     skip_silent: bool = True, **kwargs) -> dict:
    """grpo_update with the shared-prompt pass and, when beta = 0 and `skip_silent`, without the rows whose advantage is
    0 (their terms -min(r A, clip(r) A) are 0): the loss is still averaged over the whole batch's tokens (or rows), so
    the gradient is the full update's. One row is kept when all are silent, so the optimizer still steps."""
    num_tokens, num_rows = max(int(batch.completion_mask.sum()), 1), len(batch)
    if beta == 0 and skip_silent:
        live = advantages.nonzero().flatten().tolist() or [0]
        if len(live) < len(batch):
            batch, advantages = batch.select(live), advantages[live]
    return grpo_update(model, optimizer, batch, advantages, beta=beta, logprob_fn=shared_logprobs,
                       num_tokens=num_tokens, num_rows=num_rows, **kwargs)
