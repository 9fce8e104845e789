"""What each down-sampling rule keeps of the GRPO gradient, and when groups go silent.

Paper (Section 3): max-variance down-sampling keeps "the strongest contrastive signal" of the n
rollouts. On one fixed pool of n scored rollouts per prompt: cosine and norms of GRPO's LoRA gradient on
each rule's m-subset (advantages within the kept m) against all n, as grpo_update (1 epoch, beta 0) applies.

Why a Gram matrix. With one epoch the ratio is 1 and grpo_loss is linear in the advantages:
    grad L_S = sum_{i in S} c_i u_i,   c_i = A_i^S / N_S,   u_i = grad of grpo_loss(row i, A=1, N=1)
(u_i = -grad sum_t log p(o_i,t); N_S = completion tokens of S). So one backward pass per rollout
gives u_i, the n x n Gram matrix K = U U^T of a prompt holds every inner product, and any subset's
cosine to the full pool is  c_S^T K c_full / sqrt(c_S^T K c_S * c_full^T K c_full)  -- hundreds of
random draws cost no further backward passes (the tests check it against `subset_gradient`).

Silent groups (all rewards equal: no gradient): max-variance keeps unequal rewards whenever the n have
any (m >= 2), so PODS is silent only as often as a group of n, not of m."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch
from tqdm.auto import tqdm

from minipods.downsample import RULES, downsample
from minipods.grpo import group_advantages, grpo_loss, token_logprobs
from minipods.rollouts import Rollouts


# ---------------------------------------------------------------- gradients through grpo_loss
def _flat_grad(model, batch: Rollouts, adv: torch.Tensor, num_tokens: float, temperature: float,
               chunk_tokens: int) -> torch.Tensor:
    """(D,) float32 gradient of grpo_loss (one epoch: old_logp = logp, beta 0) w.r.t. the trainable params."""
    params, was_training = [p for p in model.parameters() if p.requires_grad], model.training
    model.train()  # as grpo_update does
    try:
        logp = token_logprobs(model, batch.prompt_ids, batch.prompt_mask, batch.completion_ids,
                              batch.completion_mask, temperature, chunk_tokens)  # (B, C)
        loss, _ = grpo_loss(logp, logp.detach(), adv, batch.completion_mask.to(logp.device), num_tokens)
        if not loss.requires_grad:  # no completion token at all: the loss is a constant 0
            return torch.zeros(sum(p.numel() for p in params))
        grads = torch.autograd.grad(loss, params, allow_unused=True)
    finally:
        model.train(was_training)
    return torch.cat([(g if g is not None else torch.zeros_like(p)).reshape(-1).float().cpu()
                      for g, p in zip(grads, params)])


def subset_gradient(model, ro: Rollouts, rewards, idx, temperature: float = 1.0,
                    chunk_tokens: int = 512) -> torch.Tensor:
    """(D,) the GRPO gradient of the kept rows `idx` of `ro` (advantages standardised per prompt)."""
    idx = [int(i) for i in idx]
    batch = ro.select(idx)
    adv = group_advantages(torch.as_tensor(rewards, dtype=torch.float32)[idx], batch.group)
    return _flat_grad(model, batch, adv, max(int(batch.completion_mask.sum()), 1), temperature, chunk_tokens)


def rollout_gradients(model, ro: Rollouts, rows, temperature: float = 1.0, chunk_tokens: int = 512) -> torch.Tensor:
    """(len(rows), D) u_i: grpo_loss's gradient on row i alone, advantage 1, num_tokens 1."""
    return torch.stack([_flat_grad(model, ro.select([int(i)]), torch.ones(1), 1.0, temperature, chunk_tokens)
                        for i in rows])


# ---------------------------------------------------------------- the pool and its Gram matrices
@dataclass
class GradientPool:
    """One fixed pool: P prompts x n rollouts, with every inner product of their per-rollout gradients."""
    gram: np.ndarray  # (P, n, n) float64: K[g] = U_g U_g^T for prompt g
    tokens: np.ndarray  # (P, n) completion tokens per rollout
    rewards: np.ndarray  # (P, n)


def gradient_pool(model, ro: Rollouts, rewards, temperature: float = 1.0, chunk_tokens: int = 512,
                  progress: bool = False) -> GradientPool:
    """Per-rollout gradients of `ro` (group-major), reduced prompt by prompt to n x n Gram matrices."""
    n, P = ro.n, len(ro) // ro.n
    r = np.asarray(torch.as_tensor(rewards, dtype=torch.float64)).reshape(P, n)
    tokens, gram = ro.completion_mask.sum(1).numpy().reshape(P, n), np.zeros((P, n, n))
    for g in tqdm(range(P), desc="per-rollout gradients", leave=False, disable=not progress):
        U = rollout_gradients(model, ro, range(g * n, (g + 1) * n), temperature, chunk_tokens).double()  # (n, D)
        gram[g] = (U @ U.T).numpy()
    return GradientPool(gram, tokens, r)


def coefficients(rewards, tokens, idx) -> np.ndarray:
    """(n,) c with grad L_S = sum_i c_i u_i for the kept indices `idx` of one prompt's n rollouts."""
    idx = [int(i) for i in idx]
    r = torch.as_tensor(np.asarray(rewards, dtype=np.float64)[idx], dtype=torch.float32)
    adv = group_advantages(r, torch.zeros(len(idx), dtype=torch.long)).double().numpy()
    c = np.zeros(len(rewards))
    c[idx] = adv / max(float(np.asarray(tokens)[idx].sum()), 1.0)
    return c


def gram_norm(K: np.ndarray, c: np.ndarray) -> float:
    return math.sqrt(max(float(c @ K @ c), 0.0))


def gram_cosine(K: np.ndarray, a: np.ndarray, b: np.ndarray) -> float:
    """cos(sum a_i u_i, sum b_i u_i); 0 when only a's is zero (a silent subset), nan when b's is."""
    na, nb = gram_norm(K, a), gram_norm(K, b)
    if nb == 0:
        return float("nan")
    return 0.0 if na == 0 else float(np.clip((a @ K @ b) / (na * nb), -1.0, 1.0))


def rule_subsets(rewards, m: int, rule: str, draws: int = 1, rng=None) -> list[list[int]]:
    """The subsets a rule of minipods.downsample keeps: one for the deterministic rules, `draws` for random."""
    return [downsample(rewards, m, rule, rng) for _ in range(draws if rule == "random" else 1)]


def compare_rules(pool: GradientPool, ms, rules=RULES, draws: int = 200, seed: int = 0) -> dict:
    """Cosine to the full-pool gradient and norm of each rule's subset gradient. Returns {"full_norm":
    (P,), "silent_pool": (P,) bool, "n", "draws", "m": {m: {rule: {"cos", "norm": (P,) (random: mean over
    draws), "cos_draws": (P, draws) (random only), "cos_mean", "norm_mean", "norm_ratio_mean",
    "silent_frac"}}}}; the means are over prompts whose pool is not silent."""
    P, n = pool.rewards.shape
    full = [coefficients(pool.rewards[g], pool.tokens[g], range(n)) for g in range(P)]
    full_norm = np.array([gram_norm(pool.gram[g], full[g]) for g in range(P)])
    live = full_norm > 0
    live_mean = lambda x: float(np.mean(x[live])) if live.any() else float("nan")  # noqa: E731
    out = {"full_norm": full_norm, "silent_pool": ~live, "n": n, "draws": draws, "m": {}}
    for m in ms:
        if not 1 <= m <= n:
            raise ValueError(f"m must be in [1, n={n}], got {m}")
        out["m"][m] = {}
        for rule in rules:
            rng = np.random.default_rng([seed, m])  # the same draws for a given (seed, m)
            cos, norm, silent, cos_draws = np.full(P, np.nan), np.zeros(P), np.zeros(P), []
            for g in range(P):
                subs = rule_subsets(pool.rewards[g], m, rule, draws, rng)
                cs = [coefficients(pool.rewards[g], pool.tokens[g], s) for s in subs]
                c_cos = np.array([gram_cosine(pool.gram[g], c, full[g]) for c in cs])
                c_norm = np.array([gram_norm(pool.gram[g], c) for c in cs])
                cos[g], norm[g], silent[g] = np.mean(c_cos), np.mean(c_norm), np.mean(c_norm == 0)
                cos_draws.append(c_cos)
            res = {"cos": cos, "norm": norm, "cos_mean": live_mean(cos), "norm_mean": live_mean(norm),
                   "norm_ratio_mean": live_mean(norm / np.where(live, full_norm, 1.0)),
                   "silent_frac": live_mean(silent)}
            if rule == "random":
                res["cos_draws"] = np.array(cos_draws)  # (P, draws)
            out["m"][m][rule] = res
    return out


# ---------------------------------------------------------------- silent groups
def predicted_silent_fraction(p, n: int) -> float:
    """Mean over prompts of p^n + (1-p)^n: the chance that n binary rewards at pass rate p are equal."""
    p = np.asarray(p, dtype=np.float64)
    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    if ((p < 0) | (p > 1)).any():
        raise ValueError("pass rates must be in [0, 1]")
    return float(np.mean(p ** n + (1 - p) ** n))


def observed_silent_fraction(rewards, n: int) -> float:
    """Mean over prompts (rewards: (P, N)) of the exact share of the size-n subgroups of its N rewards that
    are all equal: sum over distinct values v of C(count_v, n) / C(N, n)."""
    r = np.asarray(rewards, dtype=np.float64)
    if r.ndim != 2:
        raise ValueError(f"rewards must be (prompts, N), got shape {r.shape}")
    N = r.shape[1]
    if not 1 <= n <= N:
        raise ValueError(f"n must be in [1, N={N}], got {n}")
    fr = [sum(math.comb(int(c), n) for c in np.unique(row, return_counts=True)[1]) / math.comb(N, n) for row in r]
    return float(np.mean(fr))


def silent_curve(correct, ns) -> dict:
    """Observed vs predicted (at each prompt's pass rate) silent fraction for each n in `ns`; correct: (P, N) 0/1."""
    c = np.asarray(correct, dtype=np.float64)
    if c.ndim != 2 or not np.isin(c, (0.0, 1.0)).all():
        raise ValueError("correct must be a (prompts, N) array of 0/1 rewards")
    p = c.mean(1)
    return {"n": list(ns), "pass_rate": p, "observed": [observed_silent_fraction(c, k) for k in ns],
            "predicted": [predicted_silent_fraction(p, k) for k in ns]}
