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


# ---------------------------------------------------------------- dtype, device index (CUDA simulated)
@pytest.mark.parametrize("card, capability, want", [("T4", (7, 5), torch.float16), ("V100", (7, 0), torch.float16),
                                                    ("A100", (8, 0), torch.bfloat16), ("H100", (9, 0), torch.bfloat16)])
def test_auto_dtype_is_bf16_only_from_compute_capability_8(card, capability, want, monkeypatch):
    from minipods.model import pick_dtype

    asked = []
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda d=None: asked.append(d) or capability)
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda *a, **k: True)  # what a T4 says (emulation)
    assert pick_dtype("auto", "cuda:1") == want
    assert asked == [torch.device("cuda:1")]  # the chosen card, not the current one
    assert pick_dtype("auto", "cpu") == torch.float32 and pick_dtype("float16", "cuda") == torch.float16


def test_peak_memory_reads_the_chosen_cuda_device(monkeypatch):
    from minipods.measure import memory as M

    seen = []

    def fake(name, value=0):
        def f(device=None):
            seen.append((name, device))
            return value
        monkeypatch.setattr(torch.cuda, name, f)
    for name in ("synchronize", "empty_cache", "reset_peak_memory_stats"):
        fake(name)
    fake("max_memory_allocated", 3 * 2**20)
    fake("max_memory_reserved", 5 * 2**20)
    fake("memory_allocated", 2**20)
    assert M.peak_mb("cuda:1") == 3.0 and seen == [("max_memory_allocated", torch.device("cuda:1"))]
    seen.clear()
    with M.MemoryMeter("cuda:1") as mm:
        pass
    assert (mm.base_mb, mm.peak_mb, mm.reserved_mb) == (1.0, 3.0, 5.0)
    assert {d for name, d in seen if name != "empty_cache"} == {torch.device("cuda:1")}


# ---------------------------------------------------------------- fp16 with dynamic loss scaling
def _fp16_tiny_and_batch():
    """The tiny policy with an fp16 base and (as peft keeps them) float32 LoRA weights, B non-zero,
    and 4 fixed rollouts of 2 prompts."""
    from minipods.model import add_lora
    from minipods.rollouts import generate_rollouts

    base, tok = tiny_policy(seed=2, lora=False)
    torch.manual_seed(0)
    ro = generate_rollouts(base, tok, ["[user]\n12+7?\n[assistant]\n", "[user]\n3*4?\n[assistant]\n"], 2,
                           max_new_tokens=8)
    model = add_lora(base.half(), r=8, alpha=16)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "lora_B" in name:
                p.normal_(0, 0.02, generator=torch.Generator().manual_seed(1))
    return model, ro


def _lora_step(model, ro, scaler, num_tokens):
    from minipods.grpo import grpo_update

    before = {n: p.detach().clone() for n, p in model.named_parameters() if p.requires_grad}
    opt = torch.optim.SGD([p for p in model.parameters() if p.requires_grad], lr=1.0)
    out = grpo_update(model, opt, ro, torch.tensor([1.0, -1.0, -1.0, 1.0]), micro_batch_size=2, max_grad_norm=None,
                      num_tokens=num_tokens, scaler=scaler)
    delta = torch.cat([(p.detach() - before[n]).flatten().double() for n, p in model.named_parameters()
                       if p.requires_grad])
    with torch.no_grad():
        for n, p in model.named_parameters():
            if n in before:
                p.copy_(before[n])
    return out, delta


def test_fp16_update_with_loss_scaling_keeps_the_small_gradients():
    """A loss averaged over a million tokens (the paper averages over ~38K): its gradients flowing
    back through fp16 activations underflow without a scale; with the dynamic scale they match the
    float32 update's."""
    from minipods.grpo import loss_scaler

    model, ro = _fp16_tiny_and_batch()
    scaler = loss_scaler(model)
    assert scaler is not None and scaler.get_scale() == 2.0 ** 16
    ref = _lora_step(model.float(), ro, None, 10**6)[1]
    model.half()
    for n, p in model.named_parameters():  # back to peft's layout: float32 adapter on an fp16 base
        if p.requires_grad:
            p.data = p.data.float()
    out, scaled = _lora_step(model, ro, scaler, 10**6)
    _, plain = _lora_step(model, ro, None, 10**6)
    err = lambda d: float((d - ref).norm() / ref.norm())  # noqa: E731
    assert out["skipped"] == 0 and out["loss_scale"] == 2.0 ** 16 and ref.norm() > 0
    assert err(scaled) < 0.05
    assert err(plain) > 0.5  # most of the gradient underflowed: what the scale is for
    assert loss_scaler(tiny_policy(seed=2)[0]) is None  # float32: no scaler
    from minipods.train import TrainConfig, make_engine
    assert isinstance(make_engine(TrainConfig(), model, "cpu").scaler, torch.amp.GradScaler)


def test_fp16_overflow_is_skipped_counted_and_backs_the_scale_off():
    from minipods.grpo import loss_scaler

    model, ro = _fp16_tiny_and_batch()
    scaler = torch.amp.GradScaler("cpu", init_scale=2.0 ** 40)  # so large that the scaled fp16 backward overflows
    assert loss_scaler(model) is not None
    out, delta = _lora_step(model, ro, scaler, 1)
    assert out["skipped"] == 1 and out["loss_scale"] == 2.0 ** 39 and delta.abs().max() == 0
    assert out["grad_norm"] != out["grad_norm"]  # nan: reported as such


def test_fp16_loss_scale_comes_back_on_resume_and_a_bad_one_is_refused(tmp_path):
    """Resume is exact in fp16 too: the scale a run had backed off to, and its growth counter, come back
    from trainer.pt (a fresh GradScaler would start again at 2^16 and overflow, skipping steps the
    uninterrupted run took). A scaler state that is not plain numbers is refused like any foreign file."""
    from minipods import checkpoint as ck
    from minipods.train import TrainConfig, _restore, make_engine

    model, _ = _fp16_tiny_and_batch()
    engine = make_engine(TrainConfig(), model, "cpu")
    reached = {"scale": 2.0 ** 9, "growth_factor": 2.0, "backoff_factor": 0.5, "growth_interval": 2000,
               "_growth_tracker": 37}
    engine.scaler.load_state_dict(reached)
    ck.save_checkpoint(tmp_path, model, engine.optimizer, {"step": 3, "elapsed_s": 1.5, "nonfinite_skips": 2},
                       engine.scaler)
    fresh = make_engine(TrainConfig(), model, "cpu")
    assert fresh.scaler.get_scale() == 2.0 ** 16
    state = _restore(ck.load_checkpoint(tmp_path), tmp_path, model, fresh, "cpu")
    assert state == {"step": 3, "elapsed_s": 1.5, "nonfinite_skips": 2}
    assert fresh.scaler.state_dict() == reached and fresh.scaler.get_scale() == 2.0 ** 9
    path = tmp_path / "checkpoint" / "trainer.pt"
    trainer = torch.load(path, weights_only=True)
    trainer["scaler"]["scale"] = "512"
    torch.save(trainer, path)
    with pytest.raises(ck.Refused, match="loss-scaler state is not plain numbers"):
        ck.load_trainer(path)


def test_an_fp16_run_that_overflows_stops_before_training_with_the_fix(tmp_path, capsys, monkeypatch):
    """A float16 run checks its first real forward: finite logits train on; non-finite ones (real weights
    whose activations pass 65504) stop the run before any step, one line naming --dtype float32."""
    import minipods.train as T
    from minipods.model import base_model_of

    model, _ = _fp16_tiny_and_batch()
    tok = tiny_tokenizer()
    T.check_fp16_forward(model, tok, "[user]\n1+1?\n[assistant]\n")  # finite: passes
    with torch.no_grad():  # an activation fp16 cannot hold
        base_model_of(model).model.norm.weight.fill_(6e4)
    monkeypatch.setattr(T, "load_policy", lambda *a, **k: (model, tok))
    out = tmp_path / "run"
    rc = T.main(["--data", "synthetic", "--max-steps", "1", "--n", "2", "--m", "2", "--output-dir", str(out),
                 "--no-progress"])
    err = [ln for ln in capsys.readouterr().err.splitlines() if not ln.startswith("minipods: using the SYNTHETIC")]
    assert rc == 2 and len(err) == 1 and "float16 overflows" in err[0] and "--dtype float32" in err[0]
    assert not (out / "metrics.jsonl").exists()  # nothing trained


def test_tf32_is_on_from_compute_capability_8_unless_opted_out(monkeypatch, tmp_path):
    from minipods.model import use_tf32

    before = torch.backends.cuda.matmul.allow_tf32
    try:
        for capability, allow, device, on in [((8, 0), True, "cuda:1", True), ((7, 5), True, "cuda", False),
                                              ((9, 0), False, "cuda", False), ((8, 6), True, "cpu", False)]:
            monkeypatch.setattr(torch.cuda, "get_device_capability", lambda d=None: capability)
            assert use_tf32(allow, device) is on and torch.backends.cuda.matmul.allow_tf32 is on, (capability, allow)
    finally:
        torch.backends.cuda.matmul.allow_tf32 = before


# ---------------------------------------------------------------- why the embedding stays float32
def test_embedding_in_bf16_alone_would_not_shrink_the_kv_cache(tmp_path, monkeypatch):
    """A 4-bit Qwen-shaped twin with bf16 compute, prepared as training prepares it: the residual
    stream and KV cache are float32 whatever the embedding's dtype (peft's k-bit preparation upcasts
    the norms, and each RMSNorm's float32 weight promotes its output), so casting the embedding and
    tied LM head back to bf16 saves only their own half and leaves the head a float32-by-bf16
    matmul that fails. So minipods keeps them float32 (docs/gpu.md)."""
    from minipods.model import load_policy
    from minipods.twins import arch  # noqa: F401  (registers the random: names)

    monkeypatch.setenv("MINIPODS_CACHE", str(tmp_path))
    spec = "random:Qwen/Qwen2.5-0.5B-Instruct:layers=1,hidden=64,intermediate=128,heads=4,kv_heads=2,vocab=512"
    model, _ = load_policy(spec, quantize="4bit", dtype="bfloat16", device="cpu")
    model.train()  # 4-bit on CPU: as model.generation_mode keeps it
    base = base_model_of(model)
    ids = torch.randint(300, 500, (2, 12))
    for cast in (False, True):
        emb = base.get_input_embeddings()
        assert emb.weight.dtype == (torch.bfloat16 if cast else torch.float32)
        assert {m.weight.dtype for n, m in base.named_modules() if n.endswith("norm")} == {torch.float32}
        with torch.no_grad():
            out = base.get_decoder()(input_ids=ids, use_cache=True)
        assert out.last_hidden_state.dtype == torch.float32
        assert out.past_key_values.layers[0].keys.dtype == torch.float32
        if cast:
            with pytest.raises(RuntimeError, match="dtype"):
                base(input_ids=ids)
        else:
            assert base(input_ids=ids).logits.isfinite().all()
        emb.to(torch.bfloat16)


# ---------------------------------------------------------------- the GPU check's learning-direction stage
@pytest.mark.parametrize("lr, verdict", [(1e-2, "PASS"), (0.0, "FAIL")])
def test_learning_direction_on_fixed_rollouts(lr, verdict):
    """Three updates with +1 / -1 advantages: the +1 rows' mean log-prob rises, the -1 rows' falls
    (lr 0: nothing moves, so the check fails: it can)."""
    from conftest import load_script

    from minipods.data import build_prompt

    learning_direction = load_script("gpu_check").learning_direction

    model, tok = tiny_policy(seed=4)
    torch.manual_seed(0)
    batch = plain_generate(model, tok, [build_prompt(tok, q) for q in ("2+2?", "7*3?")], 4, max_new_tokens=10)
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=lr)
    res = learning_direction(model, opt, batch)
    assert res["verdict"] == verdict and res["skipped"] == 0
    if lr:
        assert res["positive_change"] > 0.01 and res["negative_change"] < -0.01
    else:
        assert res["positive_change"] == res["negative_change"] == 0


@pytest.mark.docs
def test_gpu_check_script_fits_six_minutes_on_paper():
    """The stage limits of scripts/gpu_check.sh, in the order they run: decisive first, summing to at
    most six minutes, inside the overall budget (which leaves a ten-minute loan time to start)."""
    import re
    from pathlib import Path

    text = (Path(__file__).parent.parent / "scripts" / "gpu_check.sh").read_text()
    stages = [(name, int(limit)) for name, limit in re.findall(r"^\s*stage (\w+) (\d+) ", text, re.M)]
    assert [n for n, _ in stages] == ["setup", "twin", "paper", "consumer", "learn", "fp16", "greedy"]
    total = sum(limit for _, limit in stages)
    budget = int(re.search(r"GPU_CHECK_BUDGET_S:-(\d+)", text).group(1))
    assert total == 355 and total <= 360 < budget <= 400
    assert "twin_folder(spec, cache_dir() / 'twins')" in text  # both of its arguments


# A toy CPU twin's generation peak can hold one more (rows x vocab) float32 logits buffer than the
# planner's stored decode_buffers: measured on an AVX2 AMD EPYC sitting, 620,176 B against 556,687 B
# predicted (+11.4%; 63,489 B, one 8 x 2048 x 4 B buffer), where other sittings were within 10%. At a
# GPU's scale that buffer is a rounding error; the GPU check itself keeps its 10%.
CPU_TOY_TOLERANCE = 0.15


def test_measure_phases_measures_three_phases_against_the_planner_on_a_cpu(tmp_path):
    """The GPU check's `paper`/`consumer` code path on a CPU: generation, update and one evaluation call of a narrow
    twin, each allocator peak (above the weights) beside the planner's. Update is within the GPU
    check's 10%, generation within CPU_TOY_TOLERANCE. The evaluation call is not: at this toy scale the planner
    under-predicts it by 10-24%, growing with the questions per call (2 to 8): the distinct-prompt
    prefill alone peaks above the planner's prefill moment (its measured prefill working-set term is
    short when many prompts prefill at once). The bound below records that gap; the GPU check's
    `paper`/`consumer` stages judge it at scale."""
    import json

    from conftest import load_script

    from minipods.measure import footprint as F
    from minipods.measure.plan import PlanConfig

    S, G = load_script("measure_terms"), load_script("gpu_step")
    narrow = "random:Qwen/Qwen2.5-0.5B-Instruct:hidden=128,intermediate=320,heads=4,kv_heads=2"
    terms = tmp_path / "terms.json"
    terms.write_text(json.dumps(S.terms_json({"4bit": S.measure_terms(F.model_config(narrow), "4bit")})))
    pc = PlanConfig(terms=str(terms), model=narrow + ",layers=3,vocab=2048", prompts_per_step=2, n=4, m=2,
                    max_prompt_tokens=24, max_new_tokens=24, gen_batch_size=4, micro_batch_size=2,
                    optimizer="adamw", logprob_chunk=64, eval_batch_size=6, eval_max_new_tokens=16)
    res = G.measure_phases(pc, "cpu")
    assert set(res["phases"]) == {"generation", "update", "evaluation"} and res["eval_batch"] == 6
    assert res["verdict"] == "not judged on a CPU"
    ph = res["phases"]
    assert abs(ph["generation"]["ratio"] - 1) <= CPU_TOY_TOLERANCE and abs(ph["update"]["ratio"] - 1) <= G.TOLERANCE
    assert 1.0 < ph["evaluation"]["ratio"] < 1.3
