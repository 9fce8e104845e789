"""The fast engine (minipods.fast) against the plain reference (minipods.rollouts, minipods.grpo):
greedy completions identical in float32, the sampled distribution exact, the update's gradient
equal, the policy's weights never written."""
import pytest
import torch

from minipods import rollouts
from minipods.data import build_prompt
from minipods.fast.inference import folded_copy
from minipods.fast.rollouts import generate_rollouts
from minipods.fast.sampler import InverseCDFSampler, sample_inverse_cdf
from minipods.fast.update import shared_logprobs, shared_prompt_states
from minipods.grpo import grpo_update, token_logprobs
from minipods.twins.tiny import tiny_policy
from conftest import adapted_tiny


# ---------------------------------------------------------------- rollouts
def _adapted(seed=0, dtype=torch.float32):
    return adapted_tiny(seed=seed, std=0.05, dtype=dtype)


def _fresh(seed=0):
    return adapted_tiny(seed=seed, std=0.02)


PROMPTS = ["What is 2+3?", "A much longer question about apples, pears and plums?", "x"]


def _plain_greedy(model, tok, prompts, n, new):
    """The plain reference's greedy completions (B, C)."""
    ro = rollouts.generate_rollouts(model, tok, prompts, n, max_new_tokens=new, do_sample=False)
    return ro.completion_ids[:, :int(ro.completion_mask.sum(1).max())]


@pytest.mark.parametrize("fold,batch_size", [(True, 64), (False, 64), (True, 4)])
def test_greedy_fp32_equals_plain_generate(fold, batch_size):
    model, tok = _adapted()
    prompts = [build_prompt(tok, q) for q in PROMPTS]
    ro = generate_rollouts(model, tok, prompts, 3, max_new_tokens=30, do_sample=False, batch_size=batch_size,
                           fold_adapter=fold)
    assert ro.meta["folded"] is fold and ro.meta["shared_prefill"]
    ref = _plain_greedy(model, tok, prompts, 3, 30)
    assert torch.equal(ro.completion_ids[:, :ref.shape[1]], ref)
    assert (ro.completion_mask[:, ref.shape[1]:] == 0).all()


@pytest.mark.parametrize("upcast", [False, True])
def test_folded_copy_leaves_policy_untouched_and_follows_updates(upcast):
    model, tok = _adapted(dtype=torch.bfloat16)
    prompts = [build_prompt(tok, q) for q in PROMPTS[:2]]
    before = {k: v.clone() for k, v in model.state_dict().items()}
    n_params = len(list(model.parameters()))
    torch.manual_seed(0)
    ro = generate_rollouts(model, tok, prompts, 4, max_new_tokens=12, fold_adapter=True)
    assert ro.meta["folded"]
    after = model.state_dict()
    assert after.keys() == before.keys() and all(torch.equal(before[k], after[k]) for k in before)  # bit for bit
    assert len(list(model.parameters())) == n_params  # the copy is not a submodule of the policy
    assert model.config._attn_implementation == "sdpa"
    assert (folded_copy(model, upcast=upcast).config._attn_implementation == "minipods_sdpa_upcast") is upcast
    # the copy computes the adapted policy: its logits match the unmerged model's (to bf16 rounding,
    # far below the adapter's own effect), before and after an update of the adapter
    x = tok(prompts[:1], return_tensors="pt", add_special_tokens=False).input_ids
    opt = torch.optim.SGD([p for p in model.parameters() if p.requires_grad], lr=1.0)
    for _ in range(2):
        model.eval()
        with torch.no_grad():
            want, got = model(input_ids=x).logits.float(), folded_copy(model, upcast=upcast)(input_ids=x).logits.float()
            with model.disable_adapter():
                bare = model(input_ids=x).logits.float()
        assert (want - got).abs().max() < 0.1 * (want - bare).abs().max()
        loss = model(input_ids=x).logits.float().pow(2).mean()  # any step that moves the adapter
        loss.backward()
        opt.step()
        opt.zero_grad()


def test_inverse_cdf_sampler_matches_distribution():
    g = torch.Generator().manual_seed(0)
    V = 300  # spans 3 blocks of 128, the last one partial
    w = torch.rand(V, generator=g) ** 4
    w[[0, 5, 127, 128, 200, 299]] = 0.0  # zero weights at block edges: must never be drawn
    N = 200_000
    u = torch.rand(N, dtype=torch.float64, generator=g)
    tok = sample_inverse_cdf(w.expand(N, V), u)
    freq = torch.bincount(tok, minlength=V).double() / N
    p = w.double() / w.sum()
    assert freq[w == 0].sum() == 0
    # E[TV] ~ sum_i sqrt(p_i / (2 pi N)) ~ 0.01 here; a sampler off by one token or one block is >> 0.1
    assert 0.5 * (freq - p).abs().sum() < 0.03
    # u -> 1 (and u = 0) land on the last / first positive-weight token
    edge = sample_inverse_cdf(w[None].expand(2, V), torch.tensor([1 - 2 ** -53, 0.0], dtype=torch.float64))
    assert edge.tolist() == [298, 1]


def _next_token_dist(logits, temperature, top_p):
    from transformers import TopPLogitsWarper

    scores = logits.float() / temperature
    if top_p < 1:
        scores = TopPLogitsWarper(top_p)(None, scores)
    return torch.softmax(scores, -1)[0].double()


@pytest.mark.parametrize("temperature,top_p,batch_size", [(0.7, 1.0, 64), (1.3, 0.6, 37)])
def test_sampled_first_tokens_follow_softmax_over_temperature(temperature, top_p, batch_size):
    """First tokens of N rollouts against softmax(logits / T) (nucleus-filtered), on a model whose
    next-token logits have real spread (its final norm scaled x4: logit std ~0.7, not ~0.18), so
    that a sampler ignoring T or top_p lands far outside the limit; batch_size 37 checks that
    chunking leaves the distribution alone."""
    from minipods.model import base_model_of

    model, tok = _adapted()
    with torch.no_grad():
        base_model_of(model).get_decoder().norm.weight.mul_(4.0)
    prompt = build_prompt(tok, "What is 2+3?")
    N, limit = 4000, 0.08  # E[TV] ~ 0.02-0.035 at N = 4000 for these distributions
    torch.manual_seed(0)
    ro = generate_rollouts(model, tok, [prompt], N, max_new_tokens=1, temperature=temperature, top_p=top_p,
                           batch_size=batch_size)
    model.eval()
    with torch.no_grad():
        logits = model(input_ids=tok([prompt], return_tensors="pt", add_special_tokens=False).input_ids).logits[:, -1]
    p = _next_token_dist(logits, temperature, top_p)
    freq = torch.bincount(ro.completion_ids[:, 0], minlength=p.numel()).double() / N
    assert freq[p == 0].sum() == 0
    assert 0.5 * (freq - p).abs().sum() < limit
    # power: the distributions of a sampler that ignored T, or top_p, are far from the target
    assert 0.5 * (_next_token_dist(logits, 1.0, top_p) - p).abs().sum() > 3 * limit
    if top_p < 1:
        assert 0.5 * (_next_token_dist(logits, temperature, 1.0) - p).abs().sum() > 3 * limit


def test_sampler_draws_from_the_global_rng():
    scores = torch.randn(6, 50)
    s = InverseCDFSampler(0.9)
    torch.manual_seed(3)
    a = s(None, scores).argmax(-1)
    torch.manual_seed(3)
    assert torch.equal(s(None, scores).argmax(-1), a)
    out = s(None, scores)
    assert ((out == 0).sum(-1) == 1).all() and torch.isinf(out).sum() == 6 * 49


def test_seeded_rollouts_reproduce():
    model, tok = _adapted()
    prompts = [build_prompt(tok, q) for q in PROMPTS[:2]]
    runs = []
    for seed in (5, 5, 6):
        torch.manual_seed(seed)
        runs.append(generate_rollouts(model, tok, prompts, 4, max_new_tokens=20, temperature=1.0).completion_ids)
    assert torch.equal(runs[0], runs[1]) and not torch.equal(runs[0], runs[2])


def test_4bit_decodes_with_the_unmerged_adapter():
    model, tok = tiny_policy(quantize="4bit", seed=0)
    torch.manual_seed(0)
    ro = generate_rollouts(model, tok, [build_prompt(tok, "1+1?")], 2, max_new_tokens=4, fold_adapter=True)
    assert not ro.meta["folded"] and folded_copy(model) is None and ro.completion_ids.shape[0] == 2


@pytest.mark.slow
def test_smollm2_greedy_fp32_equals_plain_generate():
    from minipods.data import synthetic_problems
    from minipods.model import load_policy

    model, tok = load_policy("smollm2-135m-instruct", dtype="float32", lora_r=16, lora_alpha=32, device="cpu")
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "lora_B" in name:
                p.normal_(0, 0.01, generator=torch.Generator().manual_seed(1))
    prompts = [build_prompt(tok, it["question"]) for it in synthetic_problems(2, seed=0)]
    ro = generate_rollouts(model, tok, prompts, 2, max_new_tokens=24, do_sample=False)
    assert ro.meta["folded"] and ro.meta["shared_prefill"]
    ref = _plain_greedy(model, tok, prompts, 2, 24)
    assert torch.equal(ro.completion_ids[:, :ref.shape[1]], ref)


# ---------------------------------------------------------------- shared prompt pass 
def _grad_after_update(batch, adv, mb, share, gc=False):
    model, _ = _fresh()
    if gc:
        model.get_base_model().gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
        model.enable_input_require_grads()
    params = {n: p for n, p in model.named_parameters() if p.requires_grad}
    before = {n: p.detach().clone() for n, p in params.items()}
    opt = torch.optim.SGD(list(params.values()), lr=1.0)  # the weight change is exactly -gradient
    out = grpo_update(model, opt, batch, adv, micro_batch_size=mb, max_grad_norm=None, temperature=0.9,
                      logprob_fn=shared_logprobs if share else None)
    return torch.cat([(before[n] - p.detach()).flatten() for n, p in params.items()]), out["loss"]


@pytest.mark.parametrize("mb", [4, 3, 8])  # whole groups, groups split across micro-batches, one micro-batch
def test_shared_prompt_update_has_the_same_gradient(batch, mb):
    adv = torch.tensor([1.0, -1.0, 0.5, -0.5, 1.0, -1.0, 0.3, -0.3])
    ref, loss_ref = _grad_after_update(batch, adv, 8, share=False)  # the full-row path, full batch
    got, loss = _grad_after_update(batch, adv, mb, share=True)
    assert ref.norm() > 0
    assert ((got - ref).norm() / ref.norm()).item() <= 1e-5
    assert loss == pytest.approx(loss_ref, rel=1e-5, abs=1e-7)


def test_shared_prompt_logprobs_match_and_the_shared_pass_runs(batch):
    model, _ = _fresh()
    sub = batch.select([0, 1, 2, 4, 5])  # 3 rows of prompt 0, 2 of prompt 1 (different prompt lengths)
    args = (sub.prompt_ids, sub.prompt_mask, sub.completion_ids, sub.completion_mask)
    with torch.no_grad():
        full = token_logprobs(model, *args, temperature=0.9)
        shared = shared_logprobs(model, sub, temperature=0.9)
        h = shared_prompt_states(model, sub)
    assert h is not None and h.shape[:2] == sub.completion_ids.shape
    assert torch.allclose(shared, full, atol=1e-5) and (shared[sub.completion_mask == 0] == 0).all()
    # rows of one group whose prompts differ cannot share: the full-row path runs instead
    sub.group[:] = 0
    with torch.no_grad():
        assert shared_prompt_states(model, sub) is None
        assert torch.allclose(shared_logprobs(model, sub, temperature=0.9), full, atol=1e-6)


def test_shared_prompt_falls_back_under_gradient_checkpointing(batch):
    adv = torch.tensor([1.0, -1.0, 0.5, -0.5, 1.0, -1.0, 0.3, -0.3])
    ref, _ = _grad_after_update(batch, adv, 4, share=False)
    got, _ = _grad_after_update(batch, adv, 4, share=True, gc=True)
    assert ((got - ref).norm() / ref.norm()).item() <= 1e-5
