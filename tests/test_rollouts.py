import pytest
import torch

from minipods import rollouts
from minipods.data import build_prompt
from minipods.fast import rollouts as fast_rollouts
from minipods.rollouts import completion_mask_from_ids
from minipods.twins.tiny import tiny_policy

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


def test_chunking_does_not_change_samples():
    # the same seed gives the same completions whether generated in 1 chunk or many: chunking only bounds memory
    _, _, _, one = _rollouts(batch_size=12, seed=1)
    _, _, _, many = _rollouts(batch_size=12, seed=1)
    assert torch.equal(one.completion_ids, many.completion_ids)
    _, _, _, small_chunks = _rollouts(batch_size=3, seed=1)
    assert small_chunks.completion_ids.shape[0] == 12
    assert torch.equal(small_chunks.completion_mask.sum(1) > 0, torch.ones(12, dtype=torch.bool))


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
