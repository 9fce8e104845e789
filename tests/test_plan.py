"""The GPU planner (`python -m minipods.plan`): every term it prices against a measurement.

Counted terms (minipods.measure.footprint) must equal the real objects' bytes: a quantised layer's
tensors and bitsandbytes' own quantize_4bit, peft's adapter, the optimizers' state after a step, a
generated KV cache. Measured terms (minipods.measure.activations), fitted on 1- and 2-layer shrunk
twins (scripts/measure_terms.py), must predict a 4-layer one within 5%: saved activations, a
micro-batch's allocated peak (also where the log-prob buffer dominates), the prefill, the last decode
step. (The stored constants are measured again by `python scripts/measure_terms.py --check-stored`.)
Then the planner itself: the paper recipe offline, the n/m asymmetry, the GPU check's code path on a
CPU, bad input.
"""

import json
import tempfile

import pytest
import torch

from minipods.measure import activations as A
from minipods.measure import footprint as F
from minipods.measure import plan as P
from minipods.measure.costmodel import L40S_FIT, load_fit, paper_l40s_model
from minipods.measure.memory import peak_allocated_bytes
from minipods.model import load_policy

from conftest import load_script

pytestmark = pytest.mark.measure  # its own tier: CI runs it; `-m 'not measure'` skips it

S = load_script("measure_terms")

# narrow twins of the Qwen2.5 family: real code paths, small tensors (the 259 byte-level ids fit in 512)
NARROW = "random:Qwen/Qwen2.5-0.5B-Instruct:hidden=128,intermediate=320,heads=4,kv_heads=2"
SMALL = NARROW + ",layers=2,vocab=512"


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    monkeypatch.setenv("MINIPODS_CACHE", str(tmp_path / "cache"))  # twin folders are built here, per test


def _unique_bytes(tensors) -> int:
    seen, total = set(), 0
    for t in tensors:
        ptr = t.untyped_storage().data_ptr()
        if ptr not in seen:
            seen.add(ptr)
            total += t.untyped_storage().nbytes()
    return total


def _quant_tensors(layer):
    qs = layer.weight.quant_state
    return [layer.weight, qs.absmax, qs.code, qs.offset, qs.state2.absmax, qs.state2.code]


# ---------------------------------------------------------------- counted terms
@pytest.mark.parametrize("shape", [(11008, 2048), (256, 2048), (100, 37)])
def test_nf4_bytes_equal_bitsandbytes_quantize_4bit(shape):
    """The 4-bit count against bitsandbytes' own storage: quantize_4bit as Linear4bit calls it."""
    import bitsandbytes.functional as bf

    q, st = bf.quantize_4bit(torch.randn(*shape), blocksize=F.NF4_BLOCK, compress_statistics=True, quant_type="nf4")
    held = [q, st.absmax, st.code, st.offset, st.state2.absmax, st.state2.code]
    assert _unique_bytes(held) == F.nf4_bytes(*shape)


def test_weights_and_lora_equal_the_loaded_models():
    import bitsandbytes as bnb

    arch = F.arch_of(F.model_config(SMALL))
    for quantize in ("4bit", None):
        model, _ = load_policy(SMALL, quantize=quantize, dtype="bfloat16", device="cpu", lora_r=8, lora_alpha=8)
        frozen = [p for p in model.parameters() if not p.requires_grad and p.dtype != torch.uint8]
        lora = [p for p in model.parameters() if p.requires_grad]
        counted = F.weight_bytes(arch, quantize)
        if quantize:
            layers = [m for m in model.modules() if isinstance(m, bnb.nn.Linear4bit)]
            assert len(layers) == len(arch.linears)
            for layer in layers:  # each quantised layer, as stored
                assert _unique_bytes(_quant_tensors(layer)) == F.nf4_bytes(*layer.weight.quant_state.shape)
            assert _unique_bytes(t for m in layers for t in _quant_tensors(m)) == counted["linear"]
            assert all(p.dtype == torch.float32 for p in frozen)  # peft's k-bit preparation upcasts the rest
            assert _unique_bytes(frozen) == counted["other"]
        else:
            assert _unique_bytes(frozen) == counted["linear"] + counted["other"]
        assert all(p.dtype == torch.float32 for p in lora)
        assert sum(p.nbytes for p in lora) == F.lora_bytes(arch, 8)


@pytest.mark.parametrize("kind", ["adamw", "adamw8bit"])
def test_optimizer_bytes_equal_the_state_after_a_step(kind):
    import bitsandbytes as bnb

    arch = F.arch_of(F.model_config(SMALL))
    for r in (64, 8):  # r=8 puts some tensors under bitsandbytes' 4096-value threshold (32-bit state)
        params = [torch.nn.Parameter(torch.zeros(n)) for n in F.lora_shapes(arch, r)]
        opt = bnb.optim.AdamW8bit(params, lr=1e-3) if kind == "adamw8bit" else torch.optim.AdamW(params, lr=1e-3)
        for p in params:
            p.grad = torch.ones_like(p)
        opt.step()
        state = [t for s in opt.state.values() for t in s.values() if torch.is_tensor(t) and t.dim() > 0]
        assert _unique_bytes(state) == F.optimizer_bytes(arch, r, kind)  # (torch's scalar step stays on the CPU)


@pytest.mark.parametrize("quantize, element_bytes", [("4bit", 4), (None, 2)])
def test_kv_cache_equals_the_config_count(quantize, element_bytes):
    """The cache's dtype is measured (float32 for 4-bit: the upcast embedding makes the stream float32)."""
    from minipods.model import generation_mode

    arch = F.arch_of(F.model_config(SMALL))
    model, _ = load_policy(SMALL, quantize=quantize, dtype="bfloat16", device="cpu", lora_r=8, lora_alpha=8)
    with torch.no_grad(), generation_mode(model):
        cache = model(input_ids=torch.randint(3, 500, (3, 17)), use_cache=True).past_key_values
    held = [t for layer in cache.layers for t in (layer.keys, layer.values)]
    assert held[0].element_size() == element_bytes
    assert sum(t.nbytes for t in held) == arch.kv_elements_per_token * 3 * 17 * element_bytes


def test_peak_allocated_bytes_is_exact():
    assert peak_allocated_bytes(lambda: torch.empty(2 ** 20, dtype=torch.uint8)) == 2 ** 20
    x = torch.randn(256, 64, requires_grad=True)
    w = torch.randn(8192, 64)

    def chunk():  # logits, then logsumexp's temporaries: the peak is a whole number of (256 x 8192) tensors
        logits = x @ w.t()
        (logits[:, 0] - torch.logsumexp(logits, -1)).sum().backward()
    assert peak_allocated_bytes(chunk) / (256 * 8192 * 4) == pytest.approx(4.0, abs=0.01)


# ---------------------------------------------------------------- measured terms
@pytest.fixture(scope="module")
def narrow_terms():
    """Terms fitted on 1- and 2-layer narrow twins, with their check on a 4-layer one."""
    return S.measure_terms(F.model_config(NARROW), "4bit", check_layers=4)


def test_measured_terms_predict_a_deeper_twin_within_5_percent(narrow_terms):
    check = narrow_terms["check"]
    kinds = ("saved", "micro-batch peak", "prefill", "decode")
    assert all(any(k.startswith(kind) for k in check) for kind in kinds)
    bad = {k: f"{100 * v:+.2f}%" for k, v in check.items() if abs(v) > 0.05}
    assert not bad, bad
    u = narrow_terms["update"]
    assert u[True].tok_layer == pytest.approx(128 * 4, rel=1e-6)  # checkpointing keeps each layer's float32 input
    assert u[False].tok_layer > 10 * u[True].tok_layer
    assert narrow_terms["gen"].kv_element_bytes == 4


def test_update_peak_where_the_logprob_buffer_dominates(narrow_terms):
    """A wide vocabulary: the peak is saved activations + the log-prob buffer, not the working set."""
    cfg = F.model_config(NARROW)
    with tempfile.TemporaryDirectory() as d:
        model, _ = S._load(S.shallow_folder(cfg, 2, d, vocab=8192), "4bit", True)
        got = S.measure_micro_batch(model, 2, 96, chunk=128)
    pr = A.predict_update(narrow_terms["update"][True], 2, 2, 96, got["completion_tokens"], 8192, "4bit", chunk=128)
    assert pr["logprob"] > pr["working"]
    assert pr["peak"] == pytest.approx(got["allocated"], rel=0.05)


def test_stored_terms_cover_the_known_models():
    for model in ["Qwen/Qwen2.5-0.5B-Instruct", "Qwen/Qwen2.5-1.5B-Instruct", "Qwen/Qwen2.5-3B-Instruct",
                  "smollm2-135m-instruct"]:
        for q in ("4bit", "none"):
            for ckpt in (False, True):
                u, g = A.stored_terms(model, q, ckpt)
                assert u.tok_layer > 0 and g.kv_element_bytes == (4 if q == "4bit" else 2)


def test_stored_terms_file_is_what_measure_terms_writes_and_gives_the_documented_peaks():
    """data/terms.json holds, per model, measure_terms' --store format (6 significant digits, ints where
    whole), and the planner reads the peaks docs/gpu.md quotes from it (the tables it replaced, same output)."""
    assert list(A.STORED) == ["Qwen/Qwen2.5-0.5B-Instruct", "Qwen/Qwen2.5-1.5B-Instruct", "Qwen/Qwen2.5-3B-Instruct",
                              "smollm2-135m-instruct"]
    for model, entry in A.STORED.items():
        held = {q: {"update": {ckpt: A.stored_terms(model, q, ckpt)[0] for ckpt in (True, False)},
                    "gen": A.stored_terms(model, q, True)[1]} for q in entry}
        assert json.dumps(S.terms_json(held, short=True)) == json.dumps(entry)  # values and int/float alike
    assert A.STORED["Qwen/Qwen2.5-3B-Instruct"]["4bit"]["update"]["True"]["work_0"] == 4.66427e+07
    GiB = 2 ** 30
    for pc, peaks in [(P.PlanConfig(model="Qwen/Qwen2.5-3B-Instruct", gpu_gb=24.0), (7.91, 5.95, 10.13)),
                      (P.PlanConfig(preset="consumer", gpu_gb=8.0), (3.99, 3.70, 4.65))]:
        p = P.plan(pc)
        assert tuple(round(p[ph]["peak"] / GiB, 2) for ph in ("generation", "update", "evaluation")) == peaks


# ---------------------------------------------------------------- the planner
PAPER_3B = P.PlanConfig(model="Qwen/Qwen2.5-3B-Instruct", gpu_gb=24.0)


def _part(phase: dict, start: str) -> float:
    return next(b for label, b, _ in phase["parts"] if label.startswith(start))


def test_paper_recipe_on_24gb_offline(capsys, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert P.main(["--model", "Qwen/Qwen2.5-3B-Instruct", "--gpu-gb", "24"]) == 0
    out = capsys.readouterr().out
    assert "1 prompts x n=64 -> m=16, 512 + 512 tokens, generate 64 per call, micro-batch 4, gradient checkpointing on" in out
    assert P.plan(PAPER_3B)["recipe"].prompts == 1  # the authors' run: one prompt per step (minipods.presets)
    assert "activation terms stored" in out and "Verdict: yes." in out and "| 64 * | 16 |" in out
    p = P.plan(PAPER_3B)
    g, u = p["generation"], p["update"]
    arch = p["terms"].arch
    assert (arch.layers, arch.kv_heads, arch.head_dim) == (36, 2, 128)
    # the rollouts in flight: 64 rows x (512 + 512 - 1) cached tokens x 2 x 36 layers x 2 heads x 128 x float32
    assert _part(g, "KV cache: 64 rollouts") == 64 * 1023 * 2 * 36 * 2 * 128 * 4
    growth = 64 * 511 * 2 * 36 * 2 * 128 * 4 / 36  # one layer's copy of the prompt's keys and values for the rows
    assert _part(g, "decode, inside a layer") == pytest.approx(growth + p["terms"].gen.decode_0)
    static = [b for _, b, _ in g["parts"][:4]]
    assert static == [b for _, b, _ in u["parts"][:4]]  # weights, LoRA, optimizer: in both phases
    assert _part(u, "gradients") == _part(u, "LoRA weights") == 4 * 119_734_272  # LoRA r=64 on the 3B: 119.7M
    assert g["peak"] == pytest.approx(sum(b for _, b, counted in g["parts"] if counted))
    assert P.fits(g["peak"], PAPER_3B) and P.fits(u["peak"], PAPER_3B)


def test_n_and_m_cost_time_not_memory_beyond_the_batches():
    """The asymmetry: past one generate call (gen batch) and one micro-batch, n and m change no peak."""
    pc = P.PlanConfig(model="Qwen/Qwen2.5-1.5B-Instruct", gpu_gb=12.0, gpu="L40S")
    p = P.plan(pc)
    rows = {(x["n"], x["m"]): x for x in p["rows"]}
    assert {(x["n"], x["m"]) for x in p["rows"]} >= {(1024, 16), (64, 1), (64, 64)}  # both ladders (n, m open)
    assert rows[(1024, 16)]["generation"]["peak"] == rows[(64, 16)]["generation"]["peak"]
    assert rows[(64, 64)]["update"]["peak"] == rows[(64, 16)]["update"]["peak"]
    assert rows[(1024, 16)]["pods_s"] > rows[(64, 16)]["pods_s"]  # ... but time
    r, t = p["recipe"], p["terms"]
    k = p["gen_batch_max"]
    assert P.fits(P.generation_phase(r, t, r.n, k)["peak"], pc)
    assert k == r.prompts * r.n or not P.fits(P.generation_phase(r, t, r.n, k + 1)["peak"], pc)
    small = P.plan(P.PlanConfig(model="Qwen/Qwen2.5-3B-Instruct", gpu_gb=8.0, gen_batch_size=256))
    assert small["generation"]["peak"] > p["generation"]["peak"]  # more rollouts in flight: more KV cache


def test_consumer_preset_and_paper_time():
    p = P.plan(P.PlanConfig(preset="consumer", gpu_gb=8.0, gpu="L40S"))
    r = p["recipe"]
    assert (r.model, r.n, r.m, r.micro_batch, r.gen_batch) == ("Qwen/Qwen2.5-1.5B-Instruct", 16, 4, 2, 32)
    assert "NOT this model" in p["time_source"]
    paper = P.plan(P.PlanConfig(model="Qwen/Qwen2.5-3B-Instruct", gpu_gb=24.0, gpu="L40S", prompts_per_step=1))  # the runs' step
    x = next(x for x in paper["rows"] if (x["n"], x["m"]) == (64, 16))
    assert (x["grpo_s"], x["pods_s"]) == pytest.approx((4.415 + 16 * (0.05841 + 0.12264), 4.415 + 64 * 0.05841 + 16 * 0.12264))
    assert x["break_even"] == pytest.approx(10.116 / 7.312, rel=1e-3)
    assert "80 released runs (4.4 s + 0.058 s per generated + 0.123 s per kept" in paper["time_source"]


def test_cost_lines_from_the_paper_and_from_a_fit(tmp_path):
    cm = paper_l40s_model()
    assert cm.fixed == L40S_FIT["fixed_s"] and cm.rollout.a == cm.update.a == 0
    assert cm.step_seconds(64, 16)["pods"] == pytest.approx(10.116, rel=1e-3)  # the runs' 10.1 s PODS step
    assert cm.step_seconds(16, 16)["grpo"] == pytest.approx(7.312, rel=1e-3)
    assert cm.step_seconds(64, 2)["pods"] == pytest.approx(8.399, rel=1e-3)  # the fixed term: m=2 is not cheap
    path = tmp_path / "bench.json"
    path.write_text(json.dumps({"parts": {"costmodel": {"rollout_fit": {"a": 1.0, "b": 0.5, "r2": 0.9},
                                                        "update_fit": {"a": 2.0, "b": 0.25}}}}))
    fit = load_fit(path)
    assert fit.step_seconds(4, 2, 1)["pods"] == pytest.approx(1 + 0.5 * 4 + 2 + 0.25 * 2)
    p = P.plan(P.PlanConfig(model="Qwen/Qwen2.5-0.5B-Instruct", gpu_gb=8.0, costmodel=str(path), n=8, m=4))
    assert p["rows"][0]["pods_s"] == pytest.approx(fit.step_seconds(8, 4, p["recipe"].prompts)["pods"])
    assert [(x["n"], x["m"]) for x in p["rows"]] == [(8, 4)]  # n and m given: one candidate


def test_gpu_check_measures_both_phases_on_a_cpu(tmp_path, narrow_terms):
    """The GPU check's code path on a CPU: the planner beside the allocator's peak of each phase (the
    twin's terms as measure_terms writes them: they do not depend on the depth or vocabulary)."""
    gpu = load_script("gpu_step")

    out, terms = tmp_path / "check.json", tmp_path / "terms.json"
    terms.write_text(json.dumps(S.terms_json({"4bit": narrow_terms})))
    argv = ["--terms", str(terms), "--device", "cpu", "--model", NARROW + ",layers=3,vocab=2048", "--prompts-per-step", "2", "--n", "4",
            "--m", "2", "--max-prompt-tokens", "24", "--max-new-tokens", "24", "--gen-batch-size", "4",
            "--micro-batch-size", "2", "--optimizer", "adamw", "--logprob-chunk", "64", "--output", str(out)]
    assert gpu.main(argv) == 0
    res = json.loads(out.read_text())
    assert res["generated_shape"] == [24, 24]  # the planner's worst case: full prompts, full completions
    assert res["verdict"] == "not judged on a CPU" and res["static_predicted"] > 0
    for phase in ("generation", "update"):  # the evaluation call: test_gpu_ready records its gap
        x = res["phases"][phase]
        # generation: one logits buffer more than the planner on some CPUs (test_gpu_ready.CPU_TOY_TOLERANCE)
        assert x["allocated"] == pytest.approx(x["predicted"], rel=0.15 if phase == "generation" else gpu.TOLERANCE), phase
