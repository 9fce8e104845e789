import pytest
import torch

from minipods.data import build_prompt
from minipods.inference import folded_copy
from minipods.model import tiny_policy
from minipods.rollouts import InverseCDFSampler, completion_mask_from_ids, generate_rollouts, sample_inverse_cdf


def test_completion_mask_stops_after_first_eos():
    eos = 9
    ids = torch.tensor([[1, 2, 9, 4, 9], [9, 1, 1, 1, 1], [1, 2, 3, 4, 5]])
    assert completion_mask_from_ids(ids, [eos]).tolist() == [[1, 1, 1, 0, 0], [1, 0, 0, 0, 0], [1, 1, 1, 1, 1]]
    # several stop ids (e.g. <|im_end|> and <|endoftext|>)
    ids = torch.tensor([[1, 7, 9, 2]])
    assert completion_mask_from_ids(ids, [7, 9]).tolist() == [[1, 1, 0, 0]]


def _rollouts(n=6, new=40, batch_size=5, seed=0):
    model, tok = tiny_policy(seed=0)
    prompts = [build_prompt(tok, q) for q in ["What is 2+3?", "A much longer question about apples, pears and plums?"]]
    torch.manual_seed(seed)
    return model, tok, prompts, generate_rollouts(model, tok, prompts, n, max_new_tokens=new, temperature=1.0,
                                                  batch_size=batch_size)


def test_generate_rollouts_shapes_masks_and_texts():
    model, tok, prompts, ro = _rollouts()
    B = 2 * 6
    assert ro.prompt_ids.shape[0] == ro.completion_ids.shape[0] == B == len(ro.texts)
    assert ro.group.tolist() == [0] * 6 + [1] * 6  # group-major
    assert ro.completion_ids.shape[1] <= 40
    # left padding: pads only at the start; every row's prompt is the tokenised prompt
    for b in range(B):
        real = ro.prompt_ids[b][ro.prompt_mask[b].bool()]
        assert tok.decode(real) == prompts[ro.group[b]]
        pm = ro.prompt_mask[b].tolist()
        assert pm == sorted(pm)  # 0...0 1...1
    # completion masks are prefixes ending at (and including) the first EOS
    eos = tok.eos_token_id
    ended = 0
    for b in range(B):
        m, ids = ro.completion_mask[b], ro.completion_ids[b]
        L = int(m.sum())
        assert m[:L].all() and not m[L:].any()
        first_eos = (ids == eos).nonzero()
        if len(first_eos):
            assert L == int(first_eos[0]) + 1
            ended += 1
        else:
            assert L == 40
        assert ro.texts[b] == tok.decode(ids[:L], skip_special_tokens=True)
    assert 0 < ended < B, "seeded run should include rows that stopped early and rows that ran to the limit"
    assert ro.num_tokens == int(ro.completion_mask.sum()) and ro.seconds > 0


def test_chunking_does_not_change_samples():
    # the same seed gives the same completions whether generated in 1 chunk or many: chunking only bounds memory
    _, _, _, one = _rollouts(batch_size=12, seed=1)
    _, _, _, many = _rollouts(batch_size=12, seed=1)
    assert torch.equal(one.completion_ids, many.completion_ids)
    _, _, _, small_chunks = _rollouts(batch_size=3, seed=1)
    assert small_chunks.completion_ids.shape[0] == 12
    assert torch.equal(small_chunks.completion_mask.sum(1) > 0, torch.ones(12, dtype=torch.bool))


def test_select_trims_padding_and_keeps_rows():
    _, tok, _, ro = _rollouts()
    sub = ro.select([0, 3, 7])
    assert sub.texts == [ro.texts[i] for i in (0, 3, 7)]
    assert sub.group.tolist() == [0, 0, 1]
    assert sub.completion_mask.any(0)[-1] and sub.prompt_mask.any(0)[0]  # no all-padding columns left
    for j, i in enumerate((0, 3, 7)):
        assert torch.equal(sub.completion_ids[j][sub.completion_mask[j].bool()],
                           ro.completion_ids[i][ro.completion_mask[i].bool()])
        assert torch.equal(sub.prompt_ids[j][sub.prompt_mask[j].bool()], ro.prompt_ids[i][ro.prompt_mask[i].bool()])


# ---------------------------------------------------------------- fast path: same results (issue 11)
def _adapted(seed=0, dtype=torch.float32):
    """Tiny policy whose LoRA B is non-zero, so the adapter (and any folding of it) matters."""
    model, tok = tiny_policy(seed=seed)
    model.to(dtype)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "lora_B" in name:
                p.normal_(0, 0.05, generator=torch.Generator().manual_seed(1))
    return model, tok


PROMPTS = ["What is 2+3?", "A much longer question about apples, pears and plums?", "x"]


def _plain_greedy(model, tok, prompts, n, new):
    tok.padding_side = "left"
    enc = tok(prompts, add_special_tokens=False, padding=True, return_tensors="pt")
    ids, am = enc.input_ids.repeat_interleave(n, 0), enc.attention_mask.repeat_interleave(n, 0)
    model.eval()
    out = model.generate(input_ids=ids, attention_mask=am, max_new_tokens=new, do_sample=False,
                         pad_token_id=tok.pad_token_id, eos_token_id=[tok.eos_token_id])
    return out[:, ids.shape[1]:]


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


@pytest.mark.parametrize("temperature,top_p", [(0.7, 1.0), (1.3, 0.6)])
def test_sampled_first_tokens_follow_softmax_over_temperature(temperature, top_p):
    from transformers import TopPLogitsWarper

    model, tok = _adapted()
    prompt = build_prompt(tok, "What is 2+3?")
    N = 4000
    torch.manual_seed(0)
    ro = generate_rollouts(model, tok, [prompt], N, max_new_tokens=1, temperature=temperature, top_p=top_p)
    model.eval()
    with torch.no_grad():
        logits = model(input_ids=tok([prompt], return_tensors="pt", add_special_tokens=False).input_ids).logits[:, -1]
    scores = logits.float() / temperature
    if top_p < 1:
        scores = TopPLogitsWarper(top_p)(None, scores)
    p = torch.softmax(scores, -1)[0].double()
    freq = torch.bincount(ro.completion_ids[:, 0], minlength=p.numel()).double() / N
    assert freq[p == 0].sum() == 0
    assert 0.5 * (freq - p).abs().sum() < 0.08  # E[TV] ~ 0.03-0.05 at N = 4000 for these ~100-token distributions


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
