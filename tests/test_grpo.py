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
    mask = batch.completion_mask.bool()
    d = (ref - pol)[mask].double()
    want_kl = float((torch.exp(d) - d - 1).sum() / mask.sum())  # k3, averaged over the batch's tokens
    opt = torch.optim.SGD([p for p in model.parameters() if p.requires_grad], lr=0.1)
    out = grpo_update(model, opt, batch, torch.zeros(8), beta=0.5, micro_batch_size=3)
    assert want_kl > 1e-6
    assert out["kl"] == pytest.approx(want_kl, rel=1e-4)
    assert out["loss"] == pytest.approx(0.5 * out["kl"], rel=1e-6)  # zero advantage: the loss is beta * KL alone


def test_kl_gradient_is_the_gradient_of_the_closed_form(batch):
    """With zero advantages, grpo_update's gradient is that of beta * mean_t k3(ref - logp): the same
    closed form written out here on the naive log-probs and differentiated by autograd."""
    beta = 0.5
    model, _ = _fresh()
    args = (batch.prompt_ids, batch.prompt_mask, batch.completion_ids, batch.completion_mask)
    mask = batch.completion_mask.bool()
    with torch.no_grad(), model.disable_adapter():
        ref = naive_token_logprobs(model, *args)
    logp = naive_token_logprobs(model, *args)
    d = (ref - logp)[mask]
    (beta * (torch.exp(d) - d - 1).sum() / mask.sum()).backward()
    want = {n: p.grad.clone() for n, p in model.named_parameters() if p.requires_grad}
    model.zero_grad(set_to_none=True)
    assert sum(float(g.norm()) for g in want.values()) > 0
    opt = torch.optim.SGD([p for p in model.parameters() if p.requires_grad], lr=1.0)
    before = {n: p.detach().clone() for n, p in model.named_parameters() if p.requires_grad}
    grpo_update(model, opt, batch, torch.zeros(8), beta=beta, micro_batch_size=3, max_grad_norm=None)
    for n, p in model.named_parameters():
        if p.requires_grad:  # SGD with lr 1: the step is minus the gradient
            assert torch.allclose(before[n] - p.detach(), want[n], atol=1e-7, rtol=1e-4), n
    # and per token, d k3 / d logp = 1 - exp(ref - logp), on hand-made log-probs
    lp = torch.log(torch.tensor([[0.5, 0.25, 0.1]])).requires_grad_(True)
    r = torch.log(torch.tensor([[0.25, 0.25, 0.3]]))
    loss, _ = grpo_loss(lp, lp.detach(), torch.zeros(1), torch.tensor([[1, 1, 0]]), num_tokens=2, beta=beta,
                        ref_logp=r)
    loss.backward()
    assert lp.grad.tolist()[0] == pytest.approx([beta * (1 - 0.5) / 2, 0.0, 0.0])  # masked token: 0


def test_clip_fraction_is_the_hand_count_of_clipped_tokens(batch):
    """Two epochs: the second epoch's clip_frac is the share of completion tokens whose ratio
    pi_after_one_step / pi_old left [0.8, 1.2], counted here from the log-probs themselves."""
    adv = torch.tensor([1.0, -1.0, 1.0, -1.0, 1.0, -1.0, 1.0, -1.0])
    args = (batch.prompt_ids, batch.prompt_mask, batch.completion_ids, batch.completion_mask)
    mask = batch.completion_mask.bool()

    def trained(epochs):
        model, _ = _fresh()
        opt = torch.optim.SGD([p for p in model.parameters() if p.requires_grad], lr=5.0)
        with torch.no_grad():
            old = token_logprobs(model, *args)
        out = grpo_update(model, opt, batch, adv, update_epochs=epochs, max_grad_norm=None, micro_batch_size=3)
        return model, old, out

    one, old, out1 = trained(1)  # epoch 1 of a 2-epoch update is this one-epoch update (ratio 1)
    assert out1["clip_frac"] == 0.0
    with torch.no_grad():
        ratio = torch.exp(token_logprobs(one, *args) - old)[mask]
    assert ((ratio - 0.8).abs().min() > 1e-5) and ((ratio - 1.2).abs().min() > 1e-5)  # none on the edge (float noise ~1e-6)
    clipped = int(((ratio < 0.8) | (ratio > 1.2)).sum())
    assert 0 < clipped < int(mask.sum())
    _, _, out2 = trained(2)
    assert out2["clip_frac"] == pytest.approx(clipped / int(mask.sum()))


def test_max_grad_norm_scales_the_step(batch):
    adv = torch.tensor([1.0, -1.0, 0.5, -0.5, 1.0, -1.0, 0.3, -0.3])
    steps, outs = [], []
    for clip in (None, "tenth"):
        model, _ = _fresh()
        opt = torch.optim.SGD([p for p in model.parameters() if p.requires_grad], lr=1.0)
        before = {n: p.detach().clone() for n, p in model.named_parameters() if p.requires_grad}
        max_norm = None if clip is None else outs[0]["grad_norm"] / 10
        outs.append(grpo_update(model, opt, batch, adv, max_grad_norm=max_norm))
        steps.append({n: before[n] - p.detach() for n, p in model.named_parameters() if p.requires_grad})
    full = math.sqrt(sum(float(v.pow(2).sum()) for v in steps[0].values()))
    assert full == pytest.approx(outs[0]["grad_norm"], rel=1e-4)  # lr 1: the unclipped step is the gradient
    assert outs[1]["grad_norm"] == pytest.approx(outs[0]["grad_norm"], rel=1e-5)  # reported before clipping
    for n in steps[0]:  # clipped: the same direction, a tenth of the length
        assert torch.allclose(steps[1][n], steps[0][n] / 10, atol=1e-8, rtol=1e-4), n


def test_nonfinite_loss_or_gradient_norm_skips_the_step(batch):
    model, _ = _fresh()
    opt = torch.optim.SGD([p for p in model.parameters() if p.requires_grad], lr=1.0)
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    out = grpo_update(model, opt, batch, torch.full((8,), float("nan")))  # a NaN loss
    assert out["skipped"] == 1 and math.isnan(out["loss"])
    assert all(torch.equal(p, before[n]) for n, p in model.named_parameters())
    # a finite loss whose gradient is not: an inf in one parameter's gradient makes the norm inf
    adv = torch.tensor([1.0, -1.0, 0.5, -0.5, 1.0, -1.0, 0.3, -0.3])
    p0 = next(p for n, p in model.named_parameters() if "lora_A" in n)
    hook = p0.register_hook(lambda g: g * float("inf"))
    try:
        out = grpo_update(model, opt, batch, adv, max_grad_norm=1.0)
    finally:
        hook.remove()
    assert out["skipped"] == 1 and math.isnan(out["loss"]) and not math.isfinite(out["grad_norm"])
    assert all(torch.equal(p, before[n]) for n, p in model.named_parameters())
    out = grpo_update(model, opt, batch, adv)  # the same batch without the hook does step
    assert out["skipped"] == 0 and math.isfinite(out["loss"])
    assert not all(torch.equal(p, before[n]) for n, p in model.named_parameters())


def test_loss_types_differ_on_unequal_lengths_by_hand():
    # the hand-checked example above: per-token terms seq 0 [-2, -2.4, -1] (3 tokens), seq 1 [1, 1.5] (2)
    mask = torch.tensor([[1, 1, 1], [1, 1, 0]])
    old = torch.log(torch.tensor([[0.5, 0.5, 0.5], [0.2, 0.2, 0.2]]))
    adv = torch.tensor([2.0, -1.0])
    grads = {}
    for loss_type, want in (("dapo", (-5.4 + 2.5) / 5), ("grpo", (-5.4 / 3 + 2.5 / 2) / 2)):
        logp = (old + torch.log(torch.tensor([[1.0, 1.5, 0.5], [1.0, 1.5, 1.0]]))).requires_grad_(True)
        loss, _ = grpo_loss(logp, old, adv, mask, num_tokens=5, clip_eps=0.2, loss_type=loss_type)
        assert loss.item() == pytest.approx(want)  # dapo -0.58, grpo -0.275
        loss.backward()
        grads[loss_type] = logp.grad
    # grpo: each token of seq 0 weighs 1/(3*2), of seq 1 1/(2*2); dapo: every token 1/5
    assert torch.allclose(grads["grpo"], torch.tensor([[-2 / 6, 0.0, -1 / 6], [1 / 4, 1.5 / 4, 0.0]]))
    assert torch.allclose(grads["dapo"], torch.tensor([[-2.0, 0.0, -1.0], [1.0, 1.5, 0.0]]) / 5)
    # equal lengths: the two reductions agree
    full = torch.ones(2, 3)
    a = grpo_loss(old, old, adv, full, num_tokens=6, loss_type="dapo")[0]
    b = grpo_loss(old, old, adv, full, num_tokens=6, loss_type="grpo")[0]
    assert a.item() == pytest.approx(b.item())
    with pytest.raises(ValueError, match="loss_type"):
        grpo_loss(old, old, adv, mask, 5, loss_type="token")


def test_sequence_mean_loss_micro_batches_to_the_full_batch_and_differs_from_token_mean(batch):
    adv = torch.tensor([1.0, -1.0, 0.5, -0.5, 1.0, -1.0, 0.3, -0.3])
    lengths = batch.completion_mask.sum(1)
    assert lengths.unique().numel() > 1  # the fixture's completions have unequal lengths

    def delta(mb, loss_type):
        model, _ = _fresh()
        params = [p for p in model.parameters() if p.requires_grad]
        before = torch.cat([p.detach().flatten() for p in params])
        opt = torch.optim.SGD(params, lr=1.0)
        grpo_update(model, opt, batch, adv, micro_batch_size=mb, max_grad_norm=None, loss_type=loss_type)
        return before - torch.cat([p.detach().flatten() for p in params])

    full = delta(8, "grpo")
    for mb in (1, 3):
        assert torch.allclose(delta(mb, "grpo"), full, atol=1e-6, rtol=1e-4)
    token = delta(8, "dapo")
    assert ((token - full).norm() / full.norm()).item() > 1e-2  # a different gradient, not rounding
