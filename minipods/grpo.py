"""The GRPO policy update on the kept rollouts (the policy-update phase of PODS).

Paper (Section 2 background, Section 3 PODS, Appendix hyper-parameters): GRPO with
  * advantages A_i = (r_i - mean(r)) / (std(r) + eps), computed within each prompt's *kept*
    subset of m rollouts (the paper's choice; `adv_norm="all"` normalises over all n instead);
  * the loss reduction `loss_type` (TRL's names, `reduce_loss`): "grpo", each completion's token
    mean then the mean over completions (the authors' `compute_loss`, DeepSeekMath's formula,
    `--preset paper`), or "dapo", every token of the batch weighing the same (the default);
  * the clipped importance ratio (eps = 0.2), which matters only when the same rollouts are
    used for more than one gradient step (`update_epochs > 1`); with one step it equals 1;
  * a KL penalty beta * KL_k3(pi || pi_ref) with the k3 estimator exp(d) - d - 1,
    d = logp_ref - logp; pi_ref is the same model with the LoRA adapter disabled. beta = 0 by
    default, as in the paper's Qwen runs (then no reference pass is made at all).

Memory: per-token log-probs come from the final hidden states in chunks of tokens,
`log p(y_t) = logit[y_t] - logsumexp(logits)`, each chunk's (tokens x vocab) logits recomputed in
backward instead of stored; micro-batches bound the rest. The update's cost grows with m, not n.
This file runs every kept row as one [prompt | completion] sequence: the plain reference
(`minipods.fast.update` runs each distinct prompt once, with the same log-probs and gradient)."""

from __future__ import annotations

import math

import torch
from torch.utils.checkpoint import checkpoint

from minipods.model import base_model_of
from minipods.rollouts import Rollouts, positions_from_mask


# ---------------------------------------------------------------- advantages
def group_advantages(rewards: torch.Tensor, group: torch.Tensor, eps: float = 1e-4) -> torch.Tensor:
    """(B,) advantages: each reward standardised within its group (rows sharing `group`), unbiased std (as
    DeepSeekMath and TRL). Equal rewards get exactly 0, decided by max == min, not std > 0: the float32 mean
    of sixteen 0.1s is off by one ulp, so (r - mean) / (std + eps) would hand the group a spurious -7e-5."""
    rewards = rewards.float()
    adv = torch.zeros_like(rewards)
    for g in group.unique():
        sel = group == g
        r = rewards[sel]
        if r.numel() > 1 and r.max() > r.min():  # equal rewards: keep the exact zeros
            adv[sel] = (r - r.mean()) / (r.std() + eps)
    return adv


# ---------------------------------------------------------------- log-probs
def _chunk_logprobs(h: torch.Tensor, weight: torch.Tensor, targets: torch.Tensor, temperature: float) -> torch.Tensor:
    # h (N, H), weight (V, H), targets (N,) -> (N,) log p(target); logits live only inside here
    logits = (h @ weight.t()).float() / temperature  # (N, V)
    return logits.gather(1, targets[:, None]).squeeze(1) - torch.logsumexp(logits, dim=-1)


def backbone_and_head(model):
    """(the transformer without its LM head, the LM head) of a plain or peft model."""
    base = base_model_of(model)
    return base.get_decoder(), base.get_output_embeddings()


def logprobs_from_states(model, h: torch.Tensor, completion_ids: torch.Tensor, completion_mask: torch.Tensor,
                         temperature: float = 1.0, chunk_tokens: int = 512) -> torch.Tensor:
    """(B, C) log-probs of the completion tokens from h (B, C, H), the hidden state that predicts each of
    them; 0 where completion_mask is 0. Logits `chunk_tokens` at a time (see Memory above)."""
    device = h.device
    cmask = completion_mask.to(device).bool()
    h_valid, y_valid = h[cmask], completion_ids.to(device)[cmask]  # (N, H), (N,)
    w = backbone_and_head(model)[1].weight
    out = []
    for s in range(0, h_valid.shape[0], chunk_tokens):
        hs, ys = h_valid[s:s + chunk_tokens], y_valid[s:s + chunk_tokens]
        if torch.is_grad_enabled():
            out.append(checkpoint(_chunk_logprobs, hs, w, ys, temperature, use_reentrant=False))
        else:
            out.append(_chunk_logprobs(hs, w, ys, temperature))
    logp = torch.zeros(cmask.shape, dtype=torch.float32, device=device)  # (B, C)
    if out:
        logp = logp.masked_scatter(cmask, torch.cat(out))
    return logp


def _joined(model, prompt_ids, prompt_mask, completion_ids, completion_mask) -> dict:
    """Forward keywords for each row's [prompt | completion], (B, L) with L = P + C, on the model's device."""
    device = next(model.parameters()).device
    am = torch.cat([prompt_mask, completion_mask], 1).to(device)
    return dict(input_ids=torch.cat([prompt_ids, completion_ids], 1).to(device), attention_mask=am,
                position_ids=positions_from_mask(am), use_cache=False)


def token_logprobs(model, prompt_ids: torch.Tensor, prompt_mask: torch.Tensor, completion_ids: torch.Tensor,
                   completion_mask: torch.Tensor, temperature: float = 1.0, chunk_tokens: int = 512) -> torch.Tensor:
    """(B, C) log-probabilities of the completion tokens (0 where completion_mask is 0): the
    backbone runs once on each row's [prompt | completion], then `logprobs_from_states`."""
    backbone, _ = backbone_and_head(model)
    h = backbone(**_joined(model, prompt_ids, prompt_mask, completion_ids, completion_mask)).last_hidden_state
    P = prompt_ids.shape[1]
    h = h[:, P - 1:-1]  # (B, C, H): the state at t-1 predicts completion token t
    return logprobs_from_states(model, h, completion_ids, completion_mask, temperature, chunk_tokens)


def rollout_logprobs(model, mb: Rollouts, temperature: float = 1.0, chunk_tokens: int = 512) -> torch.Tensor:
    """`token_logprobs` of a Rollouts batch: the plain `logprob_fn` of `grpo_update`."""
    return token_logprobs(model, mb.prompt_ids, mb.prompt_mask, mb.completion_ids, mb.completion_mask,
                          temperature, chunk_tokens)


def naive_token_logprobs(model, prompt_ids, prompt_mask, completion_ids, completion_mask, temperature=1.0):
    """Reference implementation: full-vocabulary log-softmax over the whole batch (memory hungry)."""
    device = next(model.parameters()).device
    logits = model(**_joined(model, prompt_ids, prompt_mask, completion_ids, completion_mask)).logits  # (B, L, V)
    P = prompt_ids.shape[1]
    logp_all = torch.log_softmax(logits[:, P - 1:-1].float() / temperature, dim=-1)  # (B, C, V)
    logp = logp_all.gather(2, completion_ids.to(device)[..., None]).squeeze(-1)
    return logp * completion_mask.to(device)


# ---------------------------------------------------------------- loss
LOSS_TYPES = ("dapo", "grpo")


def reduce_loss(per_token: torch.Tensor, mask: torch.Tensor, loss_type: str, num_tokens: int | float,
                num_rows: int) -> torch.Tensor:
    """The scalar loss from per-token terms (B, C) under mask (B, C). "dapo": the sum over every real
    token / num_tokens (every token weighs the same). "grpo": each row's token mean, summed / num_rows
    (each completion weighs the same). num_tokens, num_rows count the *whole* kept batch, so the
    micro-batches' losses sum to the full batch's."""
    summed = per_token * mask  # (B, C)
    if loss_type == "dapo":
        return summed.sum() / num_tokens
    if loss_type == "grpo":
        return (summed.sum(1) / mask.sum(1).clamp(min=1)).sum() / num_rows
    raise ValueError(f"loss_type must be one of {', '.join(LOSS_TYPES)}, got {loss_type!r}")


def grpo_loss(logp: torch.Tensor, old_logp: torch.Tensor, advantages: torch.Tensor, mask: torch.Tensor,
              num_tokens: int | float, clip_eps: float = 0.2, beta: float = 0.0,
              ref_logp: torch.Tensor | None = None, loss_type: str = "dapo",
              num_rows: int | None = None) -> tuple[torch.Tensor, dict]:
    """Clipped GRPO surrogate per token, -min(ratio*A, clip(ratio, 1-eps, 1+eps)*A) + beta * KL_k3,
    reduced by `loss_type` over the *whole* kept batch's `num_tokens` / `num_rows` (None: B), so the
    micro-batches' losses sum to the full batch's. logp, old_logp, ref_logp, mask: (B, C); advantages: (B,)."""
    mask = mask.to(logp.dtype)
    adv = advantages.to(logp.device)[:, None]  # (B, 1)
    ratio = torch.exp(logp - old_logp)  # (B, C)
    clipped = torch.clamp(ratio, 1 - clip_eps, 1 + clip_eps)
    per_token = -torch.minimum(ratio * adv, clipped * adv)
    kl = torch.zeros_like(logp)
    if beta > 0:
        if ref_logp is None:
            raise ValueError("beta > 0 needs ref_logp")
        d = ref_logp - logp
        kl = torch.exp(d) - d - 1
        per_token = per_token + beta * kl
    loss = reduce_loss(per_token, mask, loss_type, num_tokens, num_rows or len(mask))
    with torch.no_grad():
        is_clipped = ((ratio - clipped).abs() > 1e-8).to(logp.dtype)
        stats = {"kl_sum": float((kl * mask).sum()), "clip_sum": float((is_clipped * mask).sum())}
    return loss, stats


# ---------------------------------------------------------------- one update
def loss_scaler(model):
    """A torch.amp.GradScaler when the policy computes in float16, else None: fp16's smallest normal is 6e-5,
    and the gradient of a loss averaged over ~38K tokens, flowing back through fp16 activations, falls below it."""
    base = base_model_of(model)
    dtypes = {getattr(m, "compute_dtype", None) for m in base.modules()} | {base.dtype}  # 4-bit: compute_dtype
    if torch.float16 not in dtypes:
        return None
    return torch.amp.GradScaler(next(model.parameters()).device.type)


def _optimizer_step(optimizer, params, max_grad_norm, scaler, finite: bool) -> tuple[float, bool]:
    """After a finite loss: unscale the gradients (fp16), clip them and step if their norm is finite.
    Returns (grad_norm, whether the optimizer stepped)."""
    grad_norm, unscaled = float("nan"), bool(finite and scaler)
    if unscaled:
        scaler.unscale_(optimizer)  # the true gradients (an overflow leaves an inf): clip those
    if finite:
        clip_to = max_grad_norm if max_grad_norm else float("inf")
        grad_norm = float(torch.nn.utils.clip_grad_norm_(params, clip_to))
        finite = math.isfinite(grad_norm)
    if finite:
        scaler.step(optimizer) if scaler else optimizer.step()
    if unscaled:  # halve the scale after an overflow, grow it after a run of finite steps (kept when
        scaler.update()  # the loss itself was non-finite: no gradient was unscaled to judge it)
    return grad_norm, finite


def grpo_update(model, optimizer, batch: Rollouts, advantages: torch.Tensor, micro_batch_size: int = 4,
                clip_eps: float = 0.2, beta: float = 0.0, temperature: float = 1.0, max_grad_norm: float | None = 1.0,
                update_epochs: int = 1, chunk_tokens: int = 512, logprob_fn=None, num_tokens: int | None = None,
                loss_type: str = "dapo", num_rows: int | None = None, scaler=None) -> dict:
    """Update the policy on `batch` (the kept rollouts) with per-row `advantages` (B,), gradients
    accumulated over micro-batches of `micro_batch_size` rows; a non-finite loss or gradient norm skips
    the optimizer step (`skipped`). logprob_fn(model, mb, temperature, chunk_tokens) -> (b, C) (None:
    `rollout_logprobs`). num_tokens / num_rows: what `reduce_loss` divides by (None: the batch's).
    scaler: `loss_scaler`'s. Returns loss, grad_norm, kl, clip_frac, skipped (and loss_scale)."""
    num_tokens, num_rows = num_tokens or max(int(batch.completion_mask.sum()), 1), num_rows or len(batch)
    params = [p for p in model.parameters() if p.requires_grad]
    spans = [list(range(s, min(s + micro_batch_size, len(batch)))) for s in range(0, len(batch), micro_batch_size)]
    mbs, advs = [batch.select(ix) for ix in spans], [advantages[ix] for ix in spans]
    logprob_fn = logprob_fn or rollout_logprobs

    def logp_of(mb):
        return logprob_fn(model, mb, temperature, chunk_tokens)

    ref, old = [None] * len(mbs), [None] * len(mbs)
    with torch.no_grad():
        if beta > 0:
            with model.disable_adapter():  # pi_ref = base weights: no second copy of the model
                ref = [logp_of(mb) for mb in mbs]
        if update_epochs > 1:  # pi_old for the ratio; with one epoch pi_old == pi exactly
            old = [logp_of(mb) for mb in mbs]

    model.train()
    out = {"loss": 0.0, "grad_norm": float("nan"), "kl": 0.0, "clip_frac": 0.0, "skipped": 0}
    for _ in range(update_epochs):
        optimizer.zero_grad(set_to_none=True)
        loss_total, kl_sum, clip_sum, finite = 0.0, 0.0, 0.0, True
        for mb, adv, r, o in zip(mbs, advs, ref, old):
            logp = logp_of(mb)
            loss, st = grpo_loss(logp, logp.detach() if o is None else o, adv, mb.completion_mask.to(logp.device),
                                 num_tokens, clip_eps, beta, r, loss_type, num_rows)
            if not torch.isfinite(loss):
                finite = False
                break
            (scaler.scale(loss) if scaler else loss).backward()
            loss_total += loss.item()
            kl_sum += st["kl_sum"]
            clip_sum += st["clip_sum"]
        grad_norm, finite = _optimizer_step(optimizer, params, max_grad_norm, scaler, finite)
        out["skipped"] += not finite
        if scaler:
            out["loss_scale"] = scaler.get_scale()
        optimizer.zero_grad(set_to_none=True)
        out.update(loss=loss_total if finite else float("nan"), grad_norm=grad_norm,
                   kl=kl_sum / num_tokens, clip_frac=clip_sum / num_tokens)
    return out
