import pytest
import torch

from minipods import rollouts
from minipods.data import build_prompt
from minipods.fast import rollouts as fast_rollouts
from minipods.rollouts import completion_mask_from_ids
from minipods.twins.tiny import tiny_policy
from conftest import adapted_tiny

ENGINES = {"plain": rollouts.generate_rollouts, "fast": fast_rollouts.generate_rollouts}


def test_completion_mask_stops_after_first_eos():
    eos = 9
    ids = torch.tensor([[1, 2, 9, 4, 9], [9, 1, 1, 1, 1], [1, 2, 3, 4, 5]])
    assert completion_mask_from_ids(ids, [eos]).tolist() == [[1, 1, 1, 0, 0], [1, 0, 0, 0, 0], [1, 1, 1, 1, 1]]
    # several stop ids (e.g. <|im_end|> and <|endoftext|>)
    ids = torch.tensor([[1, 7, 9, 2]])
    assert completion_mask_from_ids(ids, [7, 9]).tolist() == [[1, 1, 0, 0]]


def _rollouts(n=6, new=40, batch_size=5, seed=0, engine="fast"):
    model, tok = tiny_policy(seed=0)
    prompts = [build_prompt(tok, q) for q in ["What is 2+3?", "A much longer question about apples, pears and plums?"]]
    torch.manual_seed(seed)
    return model, tok, prompts, ENGINES[engine](model, tok, prompts, n, max_new_tokens=new, temperature=1.0,
                                                batch_size=batch_size)


@pytest.mark.parametrize("engine", ENGINES)
def test_generate_rollouts_shapes_masks_and_texts(engine):
    model, tok, prompts, ro = _rollouts(engine=engine)
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


@pytest.mark.parametrize("engine", ENGINES)
def test_greedy_completions_do_not_depend_on_chunking(engine):
    """Chunking (batch_size) only bounds memory: greedy completions are the same for any chunking.
    Prompts of three lengths (left padding differs per row) and an adapter large enough that each
    prompt gets its own completion (a misplaced row or cache would show)."""
    model, tok = adapted_tiny(std=0.3)
    prompts = [build_prompt(tok, q) for q in ["What is 2+3?", "A much longer question about apples, pears and plums?", "x"]]
    outs = [ENGINES[engine](model, tok, prompts, 4, max_new_tokens=30, do_sample=False, batch_size=bs)
            for bs in (12, 5, 3, 1)]
    ref = outs[0].completion_ids
    assert len({tuple(r) for r in ref.tolist()}) == 3  # the three prompts do get different completions
    for ro in outs[1:]:
        assert torch.equal(ro.completion_ids, ref) and torch.equal(ro.completion_mask, outs[0].completion_mask)


@pytest.mark.parametrize("engine", ENGINES)
def test_sampled_completions_reproduce_for_a_seed_and_chunking(engine):
    """What holds for sampling (documented in generate_rollouts): the same seed and batch_size give
    the same completions; another seed gives others. A different batch_size samples the same
    distribution (tests/test_fast.py) but not the same draws: chunks take random numbers in turn."""
    for bs in (12, 5):
        _, _, _, one = _rollouts(batch_size=bs, seed=1, engine=engine)
        _, _, _, again = _rollouts(batch_size=bs, seed=1, engine=engine)
        _, _, _, other = _rollouts(batch_size=bs, seed=2, engine=engine)
        assert torch.equal(one.completion_ids, again.completion_ids) and one.texts == again.texts
        assert not torch.equal(one.completion_ids, other.completion_ids)


@pytest.mark.parametrize("engine", ENGINES)
def test_long_prompts_are_truncated_on_the_left(engine):
    """A prompt over max_prompt_tokens keeps its end: the question's last words and the assistant
    header the completion must follow. (The tiny tokenizer has one token per character.)"""
    model, tok = tiny_policy(seed=0)
    question = "Start of a long question that will be cut. " * 3 + "What is 2+3 at the very end?"
    prompts = [build_prompt(tok, question), build_prompt(tok, "x")]
    long_p, limit = prompts[0], len(prompts[1])  # the short prompt just fits
    assert long_p.endswith("What is 2+3 at the very end?\n[assistant]\n") and len(long_p) > limit + 100
    ro = ENGINES[engine](model, tok, prompts, 2, max_new_tokens=3, do_sample=False, max_prompt_tokens=limit)
    assert ro.prompt_ids.shape[1] == limit
    kept = tok.decode(ro.prompt_ids[0][ro.prompt_mask[0].bool()])
    assert kept == long_p[-limit:] and not kept.startswith("[system]")  # the start of the system text went
    assert kept.endswith("What is 2+3 at the very end?\n[assistant]\n")
    assert tok.decode(ro.prompt_ids[2][ro.prompt_mask[2].bool()]) == prompts[1]  # a prompt that fits is whole
    ids, _ = rollouts.encode_prompts(tok, prompts, max_prompt_tokens=limit)
    assert tok.decode(ids[0]) == long_p[-limit:]


@pytest.mark.parametrize("engine", ENGINES)
def test_select_trims_padding_and_keeps_rows(engine):
    _, tok, _, ro = _rollouts(engine=engine)
    sub = ro.select([0, 3, 7])
    assert sub.texts == [ro.texts[i] for i in (0, 3, 7)]
    assert sub.group.tolist() == [0, 0, 1]
    assert sub.completion_mask.any(0)[-1] and sub.prompt_mask.any(0)[0]  # no all-padding columns left
    for j, i in enumerate((0, 3, 7)):
        assert torch.equal(sub.completion_ids[j][sub.completion_mask[j].bool()],
                           ro.completion_ids[i][ro.completion_mask[i].bool()])
        assert torch.equal(sub.prompt_ids[j][sub.prompt_mask[j].bool()], ro.prompt_ids[i][ro.prompt_mask[i].bool()])
