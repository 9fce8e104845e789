import math

import pytest
import torch

from conftest import adapted_tiny
from minipods.grpo import group_advantages, grpo_loss, grpo_update, naive_token_logprobs, token_logprobs
from minipods.twins.tiny import tiny_policy


def test_group_advantages_by_hand():
    r = torch.tensor([0.0, 1.0, 1.0, 0.0, 0.5, 0.5])
    g = torch.tensor([0, 0, 0, 0, 1, 1])
    adv = group_advantages(r, g, eps=0.0)
    s = math.sqrt(1 / 3)  # unbiased std of [0,1,1,0]
    assert torch.allclose(adv, torch.tensor([-0.5 / s, 0.5 / s, 0.5 / s, -0.5 / s, 0.0, 0.0]))
    # a zero-variance group gives exactly zero advantage (no signal), never NaN
    assert group_advantages(torch.ones(4), torch.zeros(4, dtype=torch.long)).eq(0).all()


def test_loss_and_gradient_on_hand_checked_example():
    # two sequences, 3 token slots; the second sequence has 2 real tokens
    mask = torch.tensor([[1, 1, 1], [1, 1, 0]])
    old = torch.log(torch.tensor([[0.5, 0.5, 0.5], [0.2, 0.2, 0.2]]))
    # token ratios: seq 0: [1, 1.5, 0.5], seq 1: [1, 1.5, *]
    logp = (old + torch.log(torch.tensor([[1.0, 1.5, 0.5], [1.0, 1.5, 1.0]])))
    logp.requires_grad_(True)
    adv = torch.tensor([2.0, -1.0])
    N = 5  # real tokens in the whole batch
    loss, st = grpo_loss(logp, old, adv, mask, num_tokens=N, clip_eps=0.2)
    # per-token -min(rA, clip(r)A):
    # seq 0 (A=2): r=1 -> -2; r=1.5 -> -min(3, 2.4) = -2.4; r=0.5 -> -min(1, 1.6) = -1
    # seq 1 (A=-1): r=1 -> 1;  r=1.5 -> -min(-1.5, -1.2) = 1.5
    assert loss.item() == pytest.approx((-2 - 2.4 - 1 + 1 + 1.5) / N)
    assert st["clip_sum"] == 3  # the three tokens whose ratio is outside [0.8, 1.2]
    loss.backward()
    # d/dlogp of -rA is -rA; clipped branch (seq 0, r=1.5) has zero gradient; masked token zero
    expected = torch.tensor([[-2.0, 0.0, -1.0], [1.0, 1.5, 0.0]]) / N
    assert torch.allclose(logp.grad, expected)


def test_kl_k3_term():
    logp = torch.log(torch.tensor([[0.5, 0.25]]))
    ref = torch.log(torch.tensor([[0.25, 0.25]]))
    mask = torch.ones(1, 2)
    loss, st = grpo_loss(logp, logp, torch.zeros(1), mask, num_tokens=2, beta=0.5, ref_logp=ref)
    d = math.log(0.5)  # ref - logp on the first token; 0 on the second
    k3 = math.exp(d) - d - 1
    assert loss.item() == pytest.approx(0.5 * k3 / 2)
    assert st["kl_sum"] == pytest.approx(k3)
    with pytest.raises(ValueError):
        grpo_loss(logp, logp, torch.zeros(1), mask, 2, beta=0.1)


def _fresh(seed=0):
    return adapted_tiny(seed=seed, std=0.02)  # LoRA B starts at zero: gradients then reach A and B


def test_chunked_logprobs_match_naive_values_and_gradients(batch):
    model, _ = _fresh()
    args = (batch.prompt_ids, batch.prompt_mask, batch.completion_ids, batch.completion_mask)
    lp = token_logprobs(model, *args, temperature=0.9, chunk_tokens=7)  # odd chunk size on purpose
    (lp.sum()).backward()
    g1 = {n: p.grad.clone() for n, p in model.named_parameters() if p.requires_grad}
    model.zero_grad()
    ref = naive_token_logprobs(model, *args, temperature=0.9)
    ref.sum().backward()
    assert torch.allclose(lp, ref, atol=1e-5)
    assert (lp[batch.completion_mask == 0] == 0).all() and (lp[batch.completion_mask == 1] < 0).all()
    for n, p in model.named_parameters():
        if p.requires_grad:
            assert torch.allclose(g1[n], p.grad, atol=1e-5, rtol=1e-4), n


def test_update_changes_adapter_not_base(batch):
    model, _ = tiny_policy(seed=0)
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-2)
    adv = torch.tensor([1.0, -1.0, 0.5, -0.5, 1.0, -1.0, 0.0, 0.0])
    out = grpo_update(model, opt, batch, adv, micro_batch_size=3)
    assert out["skipped"] == 0 and math.isfinite(out["loss"]) and out["grad_norm"] > 0
    changed = {n for n, p in model.named_parameters() if not torch.equal(p.detach(), before[n])}
    assert changed and all("lora_" in n for n in changed)
    assert any("lora_B" in n for n in changed)  # B starts at zero: the adapter now differs from identity
    assert all(not p.requires_grad for n, p in model.named_parameters() if "lora_" not in n)


def test_micro_batching_gives_the_full_batch_gradient(batch):
    adv = torch.tensor([1.0, -1.0, 0.5, -0.5, 1.0, -1.0, 0.3, -0.3])
    results = []
    for mb in (1, 3, 8):
        model, _ = _fresh()
        opt = torch.optim.SGD([p for p in model.parameters() if p.requires_grad], lr=1.0)
        before = {n: p.detach().clone() for n, p in model.named_parameters() if p.requires_grad}
        out = grpo_update(model, opt, batch, adv, micro_batch_size=mb, max_grad_norm=None)
        results.append(({n: before[n] - p.detach() for n, p in model.named_parameters() if p.requires_grad}, out["loss"]))
    for delta, loss in results[1:]:
        assert loss == pytest.approx(results[0][1], rel=1e-4, abs=1e-6)
        for n in delta:
            assert torch.allclose(delta[n], results[0][0][n], atol=1e-6, rtol=1e-4), n


def test_kl_reference_is_the_disabled_adapter(batch):
    model, _ = _fresh()
    args = (batch.prompt_ids, batch.prompt_mask, batch.completion_ids, batch.completion_mask)
    base, _ = tiny_policy(seed=0, lora=False)  # same base weights, no adapter
    with torch.no_grad():
        with model.disable_adapter():
            ref = token_logprobs(model, *args)
        plain = token_logprobs(base, *args)
        pol = token_logprobs(model, *args)
    assert torch.allclose(ref, plain, atol=1e-6)
    assert not torch.allclose(ref, pol, atol=1e-4)  # the adapter does change the policy
    opt = torch.optim.SGD([p for p in model.parameters() if p.requires_grad], lr=0.1)
    out = grpo_update(model, opt, batch, torch.zeros(8), beta=0.5)
    assert out["kl"] > 0 and out["loss"] > 0  # zero advantage: the loss is the KL penalty alone


def test_multiple_epochs_clip_and_nonfinite_skip(batch):
    model, _ = _fresh()
    opt = torch.optim.SGD([p for p in model.parameters() if p.requires_grad], lr=5.0)
    adv = torch.tensor([1.0, -1.0, 1.0, -1.0, 1.0, -1.0, 1.0, -1.0])
    out = grpo_update(model, opt, batch, adv, update_epochs=3, max_grad_norm=None)
    assert out["clip_frac"] > 0  # after the first step the ratio moved away from 1
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    out = grpo_update(model, opt, batch, torch.full((8,), float("nan")))
    assert out["skipped"] == 1 and math.isnan(out["loss"])
    assert all(torch.equal(p, before[n]) for n, p in model.named_parameters())
