"""The fast engine (minipods.fast) against the plain reference (minipods.rollouts, minipods.grpo):
greedy completions identical in float32, the sampled distribution exact, the update's gradient
equal, the policy's weights never written."""
import pytest
import torch

from minipods import rollouts
from minipods.data import build_prompt
from minipods.fast.cache import RoomyLayer, roomy_cache
from minipods.fast.inference import (PackedGroup, PackedLinear, PackedSibling, _decode_attention, folded_copy,
                                     onednn_linear_available)
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


@pytest.mark.parametrize("fold,batch_size,pack,grow", [(True, 64, None, True), (False, 64, None, True),
                                                       (True, 4, None, True), (True, 64, False, False)])
def test_greedy_fp32_equals_plain_generate(fold, batch_size, pack, grow):
    model, tok = _adapted()
    prompts = [build_prompt(tok, q) for q in PROMPTS]
    ro = generate_rollouts(model, tok, prompts, 3, max_new_tokens=30, do_sample=False, batch_size=batch_size,
                           fold_adapter=fold, pack_weights=pack, grow_in_place=grow)
    assert ro.meta["folded"] is fold and ro.meta["shared_prefill"]
    assert ro.meta["packed"] is (fold and pack is None and onednn_linear_available())
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
    # pack follows upcast on a CPU with oneDNN: a float32 (upcast) copy gets the copy's attention
    assert (folded_copy(model, upcast=upcast).config._attn_implementation == "minipods_copy_attention") is upcast
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
    given = scores.clone()
    s = InverseCDFSampler(0.9)
    torch.manual_seed(3)
    a = s(None, scores).argmax(-1)
    assert torch.equal(scores, given)  # works on its own copy: generate's logits are left alone
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


def test_shared_prompt_gradient_repeats_bit_for_bit_on_two_threads():
    """Issue 24: with rows of one prompt summed into its prompt pass by advanced indexing
    (keys[inv]), whose backward adds them in a thread-timing-dependent order, two identical
    backward passes on 2 threads parted in the last bits. Sized so that the prompt's key/value
    gradients (8 rows x 2 heads x P x 128) exceed the CPU kernel's parallel grain."""
    model, tok = tiny_policy(seed=0, hidden=512, layers=1)
    torch.manual_seed(0)
    prompt = build_prompt(tok, "A much longer question about apples, pears, plums and the price of each?")
    ro = generate_rollouts(model, tok, [prompt], 8, max_new_tokens=16, temperature=1.0)
    assert ro.prompt_ids.shape[1] * 8 * 2 * 128 > 32768
    weights = torch.linspace(-1, 1, 8)[:, None]
    threads = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        grads = []
        for _ in range(6):
            model.zero_grad(set_to_none=True)
            (shared_logprobs(model, ro, temperature=1.0) * weights).sum().backward()
            grads.append(torch.cat([p.grad.flatten() for n, p in model.named_parameters() if "lora_B" in n]))
    finally:
        torch.set_num_threads(threads)
    assert grads[0].abs().sum() > 0
    assert all(torch.equal(grads[0], g) for g in grads[1:])


# ---------------------------------------------------------------- decode levers, one by one
@pytest.mark.skipif(not onednn_linear_available(), reason="torch built without oneDNN")
def test_packed_linear_computes_the_linear_and_repacks():
    g = torch.Generator().manual_seed(0)
    w, b, x = torch.randn(300, 96, generator=g), torch.randn(300, generator=g), torch.randn(5, 1, 96, generator=g)
    lin = PackedLinear(w, b)
    assert lin.weight.shape == (300, 96) and lin.weight.numel() == w.numel()
    want = torch.nn.functional.linear(x, w, b)
    assert torch.allclose(lin(x), want, rtol=1e-5, atol=1e-5) and not torch.equal(lin(x), lin(x + 1e-3))
    assert lin(x.bfloat16()).dtype == torch.bfloat16  # UpcastLinear's contract: float32 math, x's dtype out
    lin.load_(2 * w)  # a refresh replaces the packed weight
    assert torch.allclose(lin(x), torch.nn.functional.linear(x, 2 * w, b), rtol=1e-5, atol=1e-5)


@pytest.mark.skipif(not onednn_linear_available(), reason="torch built without oneDNN")
@pytest.mark.parametrize("bias", [False, True])
def test_packed_group_gives_each_sibling_its_own_linear(bias):
    """q/k/v as one PackedGroup: each sibling's output is its own PackedLinear's, whichever sibling
    is called first; a new input is multiplied anew, and nothing is held once all were served."""
    g = torch.Generator().manual_seed(0)
    ws = [torch.randn(o, 96, generator=g) for o in (96, 32, 32)]
    bs = [torch.randn(o, generator=g) if bias else None for o in (96, 32, 32)]
    own = [PackedLinear(w, b) for w, b in zip(ws, bs)]
    group = PackedGroup([96, 32, 32], torch.cat(bs) if bias else None)
    sib = [PackedSibling(group, i, *w.shape) for i, w in enumerate(ws)]
    for s, w in zip(sib, ws):
        s.load_(w)
    x1, x2 = torch.randn(2, 5, 1, 96, generator=g)
    for order in ([0, 1, 2], [2, 0, 1]):
        got = {i: sib[i](x1) for i in order}
        for i in order:
            torch.testing.assert_close(got[i], own[i](x1), rtol=0, atol=1e-5)
        assert group._x is None and group._parts is None  # every sibling served: no tensor held
    a = sib[0](x1)  # q of x1, then q and k of x2: each call multiplies its own input
    torch.testing.assert_close(sib[0](x2), own[0](x2), rtol=0, atol=1e-5)
    torch.testing.assert_close(sib[1](x2), own[1](x2), rtol=0, atol=1e-5)
    assert not torch.allclose(a, sib[0](x2))
    sib[1].load_(2 * ws[1])  # a refresh: the group repacks once every sibling's weight is in
    torch.testing.assert_close(sib[1](x1), own[1](x1), rtol=0, atol=1e-5)  # still the old weights
    sib[0].load_(ws[0]), sib[2].load_(ws[2])
    want = torch.nn.functional.linear(x1, 2 * ws[1], bs[1])
    torch.testing.assert_close(sib[1](x1), want, rtol=1e-5, atol=1e-5)


@pytest.mark.skipif(not onednn_linear_available(), reason="torch built without oneDNN")
def test_fused_siblings_sample_the_same_tokens():
    """The folded copy with each layer's q/k/v and gate/up fused: five siblings per layer, and seeded
    sampled rollouts identical token for token with and without them."""
    from minipods.model import base_model_of

    model, tok = _adapted()
    prompts = [build_prompt(tok, q) for q in PROMPTS[:2]]
    runs = []
    for fuse in (True, False):
        torch.manual_seed(3)
        ro = generate_rollouts(model, tok, prompts, 4, max_new_tokens=20, fuse_siblings=fuse)
        siblings = sum(isinstance(m, PackedSibling) for m in folded_copy(model, fuse=fuse).modules())
        assert ro.meta["fused_siblings"] is fuse and siblings == (5 * len(base_model_of(model).get_decoder().layers) if fuse else 0)
        runs.append(ro.completion_ids)
    assert torch.equal(runs[0], runs[1])


@pytest.mark.parametrize("mask_kind", ["none", "bool", "additive"])
def test_decode_attention_equals_sdpa_with_repeated_kv_heads(mask_kind):
    g = torch.Generator().manual_seed(0)
    B, Hq, Hk, L, d = 4, 6, 2, 13, 16
    q = torch.randn(B, Hq, 1, d, generator=g)
    k = torch.randn(B, Hk, 20, d, generator=g)[:, :, :L]  # a view of a roomier buffer, as RoomyLayer gives
    v = torch.randn(B, Hk, 20, d, generator=g)[:, :, :L]
    keep = torch.ones(B, 1, 1, L, dtype=torch.bool)
    keep[1, ..., :4] = False  # left padding of row 1
    mask = {"none": None, "bool": keep, "additive": torch.zeros(B, 1, 1, L).masked_fill(~keep, torch.finfo(torch.float32).min)}[mask_kind]
    ref = torch.nn.functional.scaled_dot_product_attention(q, k.repeat_interleave(Hq // Hk, 1),
                                                           v.repeat_interleave(Hq // Hk, 1), attn_mask=mask, scale=0.3)
    got = _decode_attention(None, q, k, v, mask, scaling=0.3)  # (B, 1, Hq, d)
    assert got.shape == (B, 1, Hq, d)
    assert torch.allclose(got, ref.transpose(1, 2), atol=1e-6)
    if mask_kind != "none":  # the padded keys get no weight: changing them changes nothing
        k2 = k.clone()
        k2[1, :, :4] = 100.0
        assert torch.allclose(_decode_attention(None, q, k2, v, mask, scaling=0.3), got, atol=1e-6)


def test_roomy_layer_holds_what_concatenation_would_and_grows_past_its_room():
    g = torch.Generator().manual_seed(0)
    steps = [torch.randn(2, 3, t, 4, generator=g) for t in (5, 1, 1, 1, 2)]
    cache = roomy_cache([(steps[0], -steps[0])], room=2)  # room for 2 more: the third update must grow it
    buffers = []
    for t in steps[1:]:
        cache.update(t, -t, 0)
        buffers.append(cache.layers[0]._k.data_ptr())
    assert [b == buffers[0] for b in buffers] == [True, True, False, False]  # grown once, at the third
    assert buffers[2] == buffers[3]  # then written in place again (room for 2 more after growing)
    want = torch.cat(steps, 2)
    assert torch.equal(cache.layers[0].keys, want) and torch.equal(cache.layers[0].values, -want)
    assert cache.get_seq_length() == want.shape[2] and isinstance(cache.layers[0], RoomyLayer)


def test_in_place_cache_and_decode_attention_sample_the_same_tokens():
    """The in-place KV cache holds the very numbers concatenation would: seeded sampled rollouts
    with and without it are identical token for token."""
    model, tok = _adapted()
    prompts = [build_prompt(tok, q) for q in PROMPTS[:2]]
    runs = []
    for grow in (True, False):
        torch.manual_seed(3)
        runs.append(generate_rollouts(model, tok, prompts, 4, max_new_tokens=20, grow_in_place=grow).completion_ids)
    assert torch.equal(runs[0], runs[1])


def test_decode_chunks_do_not_hold_each_others_cache(monkeypatch):
    """Generation holds one chunk's KV cache at a time (the planner's model of the phase): when a chunk
    builds its cache, the previous chunk's is already freed."""
    import gc
    import weakref

    from minipods.fast import rollouts as fast_rollouts

    made, alive_at_build = [], []

    def recording(*args, **kwargs):
        gc.collect()
        alive_at_build.append(sum(r() is not None for r in made))
        cache = roomy_cache(*args, **kwargs)
        made.append(weakref.ref(cache))
        return cache

    monkeypatch.setattr(fast_rollouts, "roomy_cache", recording)
    model, tok = _adapted()
    prompts = [build_prompt(tok, q) for q in PROMPTS]
    generate_rollouts(model, tok, prompts, 4, max_new_tokens=8, batch_size=4, do_sample=False)
    assert alive_at_build == [0, 0, 0]  # three chunks of 4 rows, each built with no other cache alive


def test_update_without_silent_rows_gives_the_full_updates_weights(batch):
    """fast_grpo_update leaves out rows with advantage 0 (here all of prompt 0's, as max-variance
    keeps of a group whose rewards agree) and must still move every weight as the full update does;
    with no signal at all, AdamW's all-zero-gradient step (weight decay) must happen too."""
    from minipods.fast.update import fast_grpo_update

    def weights_after(adv, fast, opt_cls=torch.optim.SGD, **opt_kw):
        model, _ = _fresh()
        params = [p for p in model.parameters() if p.requires_grad]
        opt = opt_cls(params, **opt_kw)
        upd = fast_grpo_update if fast else grpo_update
        out = upd(model, opt, batch, adv, micro_batch_size=4, max_grad_norm=None, temperature=0.9)
        return torch.cat([p.detach().flatten() for p in params]), out

    adv = torch.tensor([0.0, 0.0, 0.0, 0.0, 1.0, -1.0, 0.3, -0.3])
    ref, out_ref = weights_after(adv, fast=False, lr=1.0)
    got, out = weights_after(adv, fast=True, lr=1.0)
    before, _ = weights_after(torch.zeros(8), fast=False, lr=1.0)  # SGD on a zero gradient: unchanged
    assert (ref - before).norm() > 0
    assert ((got - ref).norm() / (ref - before).norm()).item() <= 1e-5
    assert out["loss"] == pytest.approx(out_ref["loss"], rel=1e-5, abs=1e-7)  # averaged over all 8 rows' tokens
    zero = torch.zeros(8)
    ref, _ = weights_after(zero, fast=False, opt_cls=torch.optim.AdamW, lr=0.1, weight_decay=0.5)
    got, _ = weights_after(zero, fast=True, opt_cls=torch.optim.AdamW, lr=0.1, weight_decay=0.5)
    assert not torch.equal(ref, before) and torch.equal(got, ref)


@pytest.mark.parametrize("loss_type", ["dapo", "grpo"])
def test_skip_silent_off_runs_every_row_with_the_same_gradient(batch, monkeypatch, loss_type):
    """skip_silent on leaves prompt 0's four zero-advantage rows out of the backward; off runs all 8
    (the paper's and TRL's pricing). Both move the weights as the plain update does, for either
    loss reduction."""
    from minipods.fast import update as fast_update

    rows_seen = []
    real = fast_update.shared_logprobs

    def counting(model, mb, *a, **kw):  # rows that pay a forward with gradients (the update's passes)
        if torch.is_grad_enabled():
            rows_seen.append(len(mb))
        return real(model, mb, *a, **kw)

    monkeypatch.setattr(fast_update, "shared_logprobs", counting)
    adv = torch.tensor([0.0, 0.0, 0.0, 0.0, 1.0, -1.0, 0.3, -0.3])

    def delta(fast, **kw):
        model, _ = _fresh()
        params = [p for p in model.parameters() if p.requires_grad]
        before = torch.cat([p.detach().flatten() for p in params])
        opt = torch.optim.SGD(params, lr=1.0)
        upd = fast_update.fast_grpo_update if fast else grpo_update
        upd(model, opt, batch, adv, micro_batch_size=4, max_grad_norm=None, temperature=0.9,
            loss_type=loss_type, **kw)
        return before - torch.cat([p.detach().flatten() for p in params])

    ref = delta(False)
    rows_seen.clear()
    on = delta(True, skip_silent=True)
    assert sum(rows_seen) == 4
    rows_seen.clear()
    off = delta(True, skip_silent=False)
    assert sum(rows_seen) == 8
    assert ref.norm() > 0
    for got in (on, off):
        assert ((got - ref).norm() / ref.norm()).item() <= 1e-5
