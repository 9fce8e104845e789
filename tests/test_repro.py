"""scripts/repro.py: two seeded runs agree fingerprint for fingerprint, and a perturbation is
located to the module whose output it changed."""
import torch

from conftest import load_script
from minipods.train import make_config
from minipods.twins.tiny import tiny_policy

repro = load_script("repro")
first_difference, fingerprint, record_run = repro.first_difference, repro.fingerprint, repro.record_run


def _cfg():
    return make_config(None, data="synthetic", n=4, m=2, prompts_per_step=2, max_new_tokens=6, max_prompt_tokens=64,
                       lr=1e-2, eval_every=0, progress=False, lora_r=4, lora_alpha=8, dtype="float32")


def test_fingerprint_sees_one_bit():
    x = torch.randn(5, 3)
    y = x.clone()
    y.view(torch.int32)[2, 1] ^= 1  # the lowest mantissa bit of one element
    assert fingerprint(x) == fingerprint(x.clone()) and fingerprint(x) != fingerprint(y)
    assert fingerprint(x.to(torch.bfloat16)) != fingerprint(y.to(torch.float64))
    assert fingerprint(torch.tensor([1, 2])) != fingerprint(torch.tensor([2, 1, 0]))  # shape is part of it


def test_two_runs_agree_and_a_perturbation_is_located():
    a = record_run(_cfg(), 2, policy=lambda: tiny_policy(seed=0))
    b = record_run(_cfg(), 2, policy=lambda: tiny_policy(seed=0))
    labels = [lab for lab, _ in a]
    assert first_difference(a, b) is None and len(a) > 100
    assert any("inference_copy" in lab for lab in labels) and any(lab.startswith("step 2: grad") for lab in labels)

    def perturbed():  # the same policy, but the 3rd output of layer 1's MLP moves by 1e-6
        model, tok = tiny_policy(seed=0)
        mlp = model.get_base_model().model.layers[1].mlp
        calls = {"n": 0}

        def nudge(module, inputs, output):
            calls["n"] += 1
            if calls["n"] == 3:
                return output + 1e-6
        mlp.register_forward_hook(nudge)
        return model, tok

    c = record_run(_cfg(), 2, policy=perturbed)
    diff = first_difference(a, c)
    # the nudge runs in a hook after the recorder's, so the first output that differs is the layer
    # around that MLP, right after the MLP's own (unnudged) output agreed
    assert diff is not None and diff["a"][0] == diff["b"][0], diff
    assert diff["a"][0].endswith("model.layers.1") and diff["last_equal"][0].endswith("model.layers.1.mlp"), diff
    assert diff["last_equal"] == a[diff["index"] - 1]


def test_index_check_names_the_fixed_order_ways():
    r = repro.index_backward_check(passes=4)
    assert set(r) == {"x[inv]", "x.index_select(0, inv)", "x[inv], deterministic algorithms"}
    assert r["x.index_select(0, inv)"]["repeats"] and r["x[inv], deterministic algorithms"]["repeats"]
    assert all(v["ms_per_pass"] > 0 for v in r.values())
    assert not torch.are_deterministic_algorithms_enabled()  # the setting is restored
