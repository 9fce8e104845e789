"""Ready for a CUDA card without one: generation defaults, bounded evaluation, dtype choice and fp16
loss scaling, device indices, all checked on a CPU (CUDA queries simulated where they matter)."""
import pytest
import torch

from minipods.fast.rollouts import generate_rollouts as fast_generate
from minipods.model import base_model_of
from minipods.rollouts import generate_rollouts as plain_generate
from minipods.twins.tiny import tiny_policy, tiny_tokenizer

ENGINES = {"plain": plain_generate, "fast": fast_generate}


def _spread_tiny():
    """The tiny policy with its final norm scaled x4, so next-token logits have real spread."""
    model, tok = tiny_policy(seed=3)
    with torch.no_grad():
        base_model_of(model).get_decoder().norm.weight.mul_(4.0)
    return model, tok


def _plant_penalties(model):
    """What a hub model may ship in generation_config, made extreme so a leak cannot hide: every
    prompt token banned (no_repeat_ngram_size=1) or its logit crushed, and top-k / top-p cuts."""
    gc = model.generation_config
    gc.repetition_penalty, gc.no_repeat_ngram_size, gc.top_k, gc.top_p = 50.0, 1, 3, 0.5


# every printable character: under no_repeat_ngram_size=1 nearly the whole vocabulary is banned
PROMPT = "".join(chr(c) for c in range(32, 127))


@pytest.mark.parametrize("engine", sorted(ENGINES))
def test_rollouts_sample_softmax_over_temperature_whatever_the_model_ships(engine):
    model, tok = _spread_tiny()
    model.eval()
    with torch.no_grad():
        ids = tok([PROMPT], return_tensors="pt", add_special_tokens=False).input_ids
        logits = model(input_ids=ids).logits[0, -1].double()
    T, N = 0.8, 3000
    p = torch.softmax(logits / T, -1)
    in_prompt = torch.zeros_like(p, dtype=torch.bool)
    in_prompt[ids[0].unique()] = True
    assert p[in_prompt].sum() > 0.5  # the planted penalties would remove most of the mass
    _plant_penalties(model)
    gen = ENGINES[engine]
    torch.manual_seed(0)
    ro = gen(model, tok, [PROMPT], N, max_new_tokens=1, temperature=T, batch_size=1000)
    freq = torch.bincount(ro.completion_ids[:, 0], minlength=p.numel()).double() / N
    assert 0.5 * (freq - p).abs().sum() < 0.06  # E[TV] ~ 0.03 at N = 3000
    assert freq[in_prompt].sum() > 0.5
    greedy = gen(model, tok, [PROMPT], 1, max_new_tokens=1, do_sample=False)
    assert int(greedy.completion_ids[0, 0]) == int(logits.argmax())
    assert in_prompt[int(logits.argmax())]  # so a leaked no_repeat_ngram_size would change it


@pytest.mark.parametrize("fast", [True, False])
def test_evaluation_in_bounded_batches_gives_the_one_batch_results(fast, monkeypatch):
    """Questions of different lengths, evaluated 3 at a time and all at once: the same rows; and no
    engine call ever sees more than batch_size sequences (the fast prefill included)."""
    import minipods.evaluate as E

    model, tok = tiny_policy(seed=1)
    items = [{"question": "what is " + "1+" * k + "1?", "gold": str(k + 1)} for k in range(7)]
    seen = []
    real = E.fast_generate_rollouts if fast else E.rollouts.generate_rollouts

    def spy(model, tok, prompts, n, **kw):
        seen.append(len(prompts) * n)
        return real(model, tok, prompts, n, **kw)

    monkeypatch.setattr(*((E, "fast_generate_rollouts") if fast else (E.rollouts, "generate_rollouts")), spy)
    small = E.evaluate_items(model, tok, items, max_new_tokens=12, batch_size=3, fast=fast)
    assert seen == [3, 3, 1]
    seen.clear()
    big = E.evaluate_items(model, tok, items, max_new_tokens=12, batch_size=64, fast=fast)
    assert seen == [7]
    assert [r["completions"] for r in small["rows"]] == [r["completions"] for r in big["rows"]]
    assert small["tokens"] == big["tokens"] > 0
    torch.manual_seed(0)
    sampled = E.evaluate_items(model, tok, items[:4], max_new_tokens=4, batch_size=5, samples=2, temperature=1.0,
                               fast=fast)
    assert seen[1:] == [4, 4] and sampled["samples"] == 2  # 5 // 2 = 2 questions of 2 samples per call


def test_planner_prices_evaluation_and_knows_no_time_for_an_unmeasured_card(capsys):
    from minipods.measure import plan as P

    pc = P.PlanConfig(preset="consumer", gpu_gb=15.0, gpu="T4", eval_batch_size=48)
    p = P.plan(pc)
    e, arch = p["evaluation"], p["terms"].arch
    per_token = arch.kv_elements_per_token * p["terms"].gen.kv_element_bytes
    kv = {label.split(" (")[0]: b for label, b, _ in e["parts"] if label.startswith("KV cache")}
    # 48 questions at once: 48 distinct prompts prefilled together, then 48 sequences of 512 + 512 - 1 tokens
    assert kv["KV cache: shared prompt prefill"] == 48 * 511 * per_token
    assert kv["KV cache: 48 rollouts in flight"] == 48 * 1023 * per_token
    assert e["peak"] > p["generation"]["peak"]  # 48 distinct prompts, not the step's 8 shared by 16 rollouts
    assert P.evaluation_phase(p["recipe"], p["terms"], 8)["peak"] < e["peak"]
    assert all(x["pods_s"] is None and x["break_even"] is None for x in p["rows"])
    assert P.main(["--preset", "consumer", "--gpu-gb", "15", "--gpu", "T4"]) == 0
    out = capsys.readouterr().out
    assert "Time: unknown on this card (T4)" in out and "10.1" not in out and "Evaluation (32 questions" in out
    six = P.PlanConfig(preset="paper", gpu_gb=6.0, gpu="T4")
    small = P.plan(six)
    k, r, t = small["eval_batch_max"], small["recipe"], small["terms"]
    assert 0 < k < 64 and P.fits(P.evaluation_phase(r, t, k)["peak"], six)
    assert not P.fits(P.evaluation_phase(r, t, k + 1)["peak"], six)
