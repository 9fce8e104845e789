"""Architecture twins (`random:<hub id>`): the real shapes and parameter counts of known hub models,
random weights, an offline byte-level tokenizer; plus the GPU path (4-bit on CUDA, 8-bit AdamW) in
`cuda`-marked tests that are skipped without a GPU."""

import json
import math
import sys

import pytest
import torch

from minipods.data import build_prompt
from minipods.grpo import grpo_update
from minipods.model import cache_dir, is_4bit, load_policy
from minipods.twins.arch import (TWIN_CONFIGS, UnknownTwinError, build_twin, parse_twin, twin_config, twin_folder,
                                 twin_tokenizer)
from minipods.rollouts import generate_rollouts

KNOWN = ["Qwen/Qwen2.5-0.5B-Instruct", "Qwen/Qwen2.5-1.5B-Instruct", "Qwen/Qwen2.5-3B-Instruct"]
# a 2-layer twin of the 0.5B family, narrow enough for a CPU test (vocab 512 holds the 259 token ids)
SMALL = "random:Qwen/Qwen2.5-0.5B-Instruct:layers=2,hidden=64,intermediate=128,heads=4,kv_heads=2,vocab=512"


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    monkeypatch.setenv("MINIPODS_CACHE", str(tmp_path / "cache"))  # twin folders are built here, per test


# public config.json values: (hidden, intermediate, layers, heads, kv heads), and the model cards'
# parameter counts (0.49B, 1.54B, 3.09B)
@pytest.mark.parametrize("hub_id, sizes, params, billions", [
    ("Qwen/Qwen2.5-0.5B-Instruct", (896, 4864, 24, 14, 2), 494_032_768, 0.49),
    ("Qwen/Qwen2.5-1.5B-Instruct", (1536, 8960, 28, 12, 2), 1_543_714_304, 1.54),
    ("Qwen/Qwen2.5-3B-Instruct", (2048, 11008, 36, 16, 2), 3_085_938_688, 3.09),
])
def test_twin_config_shapes_and_parameter_count(hub_id, sizes, params, billions):
    from transformers import AutoModelForCausalLM
    cfg = twin_config(hub_id)
    assert (cfg.hidden_size, cfg.intermediate_size, cfg.num_hidden_layers, cfg.num_attention_heads,
            cfg.num_key_value_heads) == sizes
    assert (cfg.model_type, cfg.vocab_size, cfg.tie_word_embeddings, cfg.max_position_embeddings) == \
        ("qwen2", 151936, True, 32768)
    theta = (getattr(cfg, "rope_parameters", None) or {}).get("rope_theta", getattr(cfg, "rope_theta", None))
    assert theta == 1e6 and cfg.rms_norm_eps == 1e-6 and not cfg.use_sliding_window
    assert twin_config("random:" + hub_id).hidden_size == sizes[0]  # the prefix is accepted too
    with torch.device("meta"):  # shapes only: no memory, no time
        model = AutoModelForCausalLM.from_config(cfg)
    n = sum(p.numel() for p in model.parameters())
    assert n == params and round(n / 1e9, 2) == billions
    q = model.model.layers[0].self_attn
    head_dim = sizes[0] // sizes[3]
    assert q.q_proj.weight.shape == (sizes[0], sizes[0]) and q.k_proj.weight.shape == (sizes[4] * head_dim, sizes[0])
    assert q.q_proj.bias is not None and q.o_proj.bias is None  # Qwen2: biases on q, k, v only


def test_unknown_twin_lists_the_known_ones():
    assert list(TWIN_CONFIGS) == KNOWN
    for bad in ("nope", "random:nope", "random:Qwen/Qwen2.5-7B-Instruct"):
        with pytest.raises(ValueError, match="known: " + ", ".join(KNOWN).replace(".", r"\.")):
            twin_config(bad)
    with pytest.raises(UnknownTwinError, match="known"):
        load_policy("random:nope")
    with pytest.raises(UnknownTwinError, match="bad twin option 'depth=2'"):
        parse_twin("random:Qwen/Qwen2.5-3B-Instruct:depth=2")
    with pytest.raises(UnknownTwinError, match="unknown shrink"):
        twin_config(KNOWN[0], depth=2)


def test_random_names_resolve_through_the_twins_registration_on_the_run_device(monkeypatch, tmp_path):
    """model.py does not import twins/: importing minipods.twins.arch registers random:, and resolve_model
    hands it the run's device (a twin is built on --device cuda:1, not always on the first card)."""
    import ast
    import inspect

    from minipods import model as M

    assert not [n for n in ast.walk(ast.parse(inspect.getsource(M))) if isinstance(n, ast.ImportFrom)
                and (n.module or "").startswith("minipods")]
    asked = []
    monkeypatch.setitem(M.MODEL_SOURCES, "random:", lambda spec, cache, device: asked.append((spec, device)) or tmp_path)
    assert M.resolve_model("random:Qwen/Qwen2.5-3B-Instruct", "cuda:1") == str(tmp_path)
    assert asked == [("random:Qwen/Qwen2.5-3B-Instruct", "cuda:1")]
    monkeypatch.delitem(M.MODEL_SOURCES, "random:")
    with pytest.raises(M.ModelNotFoundError, match="minipods.twins.arch"):
        M.resolve_model("random:Qwen/Qwen2.5-3B-Instruct")


def test_parse_and_shrink():
    assert parse_twin("random:Qwen/Qwen2.5-3B-Instruct") == ("Qwen/Qwen2.5-3B-Instruct", {})
    hub_id, shrink = parse_twin(SMALL)
    assert hub_id == KNOWN[0] and shrink == dict(layers=2, hidden=64, intermediate=128, heads=4, kv_heads=2, vocab=512)
    cfg = twin_config(hub_id, **shrink)
    assert (cfg.num_hidden_layers, cfg.hidden_size, cfg.vocab_size, cfg.rms_norm_eps) == (2, 64, 512, 1e-6)
    assert twin_config(KNOWN[2], layers=2).hidden_size == 2048  # real width, fewer layers


def test_twin_tokenizer_is_byte_level_with_valid_special_ids():
    tok = twin_tokenizer()
    text = "Ava has 12 apples, €3 each.\n"
    ids = tok(text, add_special_tokens=False).input_ids
    assert ids == list(text.encode("utf-8"))  # token id = byte value
    assert tok.decode(ids) == text
    assert (tok.pad_token_id, tok.eos_token_id, len(tok)) == (256, 258, 259)
    assert tok.decode([104, 105, 5000, 151000]) == "hi"  # ids past the byte vocabulary decode to nothing
    p = build_prompt(tok, "What is 2+2?")
    assert p.startswith("<|im_start|>system\n") and p.endswith("<|im_start|>assistant\n")
    assert tok(p, add_special_tokens=False).input_ids[0] == 257


def test_twin_folder_is_cached_and_seeded(tmp_path):
    d = twin_folder(SMALL, cache_dir() / "twins")
    assert d.parent == tmp_path / "cache" / "twins" and (d / "config.json").is_file()
    mtime = (d / "config.json").stat().st_mtime_ns
    assert twin_folder(SMALL, cache_dir() / "twins") == d and (d / "config.json").stat().st_mtime_ns == mtime  # built once
    rng = torch.get_rng_state()
    m1, _ = build_twin(SMALL, device="cpu", dtype=torch.float32)
    assert torch.equal(torch.get_rng_state(), rng)  # seeded without touching the caller's random state
    m2, _ = build_twin(SMALL, device="cpu", dtype=torch.float32)
    w1, w2 = m1.model.layers[1].mlp.up_proj.weight, m2.model.layers[1].mlp.up_proj.weight
    assert torch.equal(w1, w2) and w1.std() > 0  # seeded random weights, not zeros


def test_shrunk_twin_forward_and_lora_update():
    model, tok = load_policy(SMALL, dtype="float32", device="cpu", lora_r=4, lora_alpha=8)
    base = model.get_base_model()
    assert base.config.eos_token_id == tok.eos_token_id == 258 and base.config.vocab_size == 512
    ids = tok(["hello twin", "2+2=4"], return_tensors="pt", padding=True)
    logits = model(**ids).logits
    assert logits.shape == (2, ids.input_ids.shape[1], 512) and torch.isfinite(logits).all()
    torch.manual_seed(0)
    ro = generate_rollouts(model, tok, [build_prompt(tok, "What is 3+4?")], 4, max_new_tokens=8, temperature=1.0)
    assert ro.completion_ids.shape == (4, 8)
    frozen = {n: p.detach().clone() for n, p in model.named_parameters() if not p.requires_grad}
    lora = {n: p.detach().clone() for n, p in model.named_parameters() if p.requires_grad}
    assert lora and all("lora_" in n for n in lora)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    out = grpo_update(model, opt, ro, torch.tensor([1.0, -1.0, 0.5, -0.5]), micro_batch_size=2)
    assert out["skipped"] == 0 and math.isfinite(out["loss"]) and out["grad_norm"] > 0
    assert any(not torch.equal(p, lora[n]) for n, p in model.named_parameters() if n in lora)
    assert all(torch.equal(p, frozen[n]) for n, p in model.named_parameters() if n in frozen)


@pytest.mark.filterwarnings("ignore:'minipods.train' found in sys.modules:RuntimeWarning")
def test_train_two_steps_on_a_shrunk_twin(tmp_path, monkeypatch):
    """`python -m minipods.train --model random:...` end to end on a CPU (tiny lengths). In-process:
    runpy runs the module as __main__, as `python -m` does, without a second interpreter's imports."""
    import json
    import runpy
    out = tmp_path / "run"
    monkeypatch.setattr(sys, "argv", ["minipods.train", "--model", SMALL, "--data", "synthetic", "--n", "4",
                                      "--m", "2", "--prompts-per-step", "1", "--max-new-tokens", "6", "--max-steps", "2",
                                      "--lora-r", "4", "--no-progress", "--output-dir", str(out)])
    with pytest.raises(SystemExit) as e:
        runpy.run_module("minipods.train", run_name="__main__")
    assert e.value.code == 0
    rows = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows] == [1, 2] and all(r["skipped"] == 0 and r["tokens"] == 4 * 6 for r in rows)
    assert json.loads((out / "config.json").read_text())["model"] == SMALL


# ---------------------------------------------------------------- GPU (skipped without CUDA)
@pytest.mark.cuda
def test_cuda_4bit_twin_generate_update_and_adamw8bit():
    """On a GPU: a 4-bit (NF4) shrunk twin generates, takes a GRPO step with 8-bit AdamW, and only the
    adapter moves; the paper's optimizer choice ("auto" -> adamw8bit on CUDA) is the bitsandbytes one."""
    from minipods.train import make_config, make_optimizer
    spec = "random:Qwen/Qwen2.5-0.5B-Instruct:layers=2,hidden=256,intermediate=512,heads=4,kv_heads=2,vocab=1024"
    model, tok = load_policy(spec, quantize="4bit", device="cuda", lora_r=16, lora_alpha=16,
                             gradient_checkpointing=True)
    assert is_4bit(model) and next(model.parameters()).is_cuda
    qs = [m.weight.quant_state for m in model.modules() if type(m).__name__ == "Linear4bit"]
    assert qs and all(q.quant_type == "nf4" and q.nested for q in qs)  # NF4 + double quantisation
    opt = make_optimizer(model, make_config(preset="paper", lr=1e-3), "cuda")
    assert type(opt).__name__ == "AdamW8bit"
    torch.manual_seed(0)
    ro = generate_rollouts(model, tok, [build_prompt(tok, "What is 3+4?")], 4, max_new_tokens=8, temperature=1.0)
    assert ro.completion_ids.shape[0] == 4 and ro.num_tokens > 0
    params = {n: p for n, p in model.named_parameters()}
    before = {n: p.detach().clone() for n, p in params.items()}
    out = grpo_update(model, opt, ro, torch.tensor([1.0, -1.0, 0.5, -0.5]), micro_batch_size=2, max_grad_norm=None)
    assert out["skipped"] == 0 and math.isfinite(out["loss"]) and out["grad_norm"] > 0
    assert any(not torch.equal(p, before[n]) for n, p in params.items() if p.requires_grad)
    assert all(torch.equal(p, before[n]) for n, p in params.items() if not p.requires_grad)  # base frozen
    big = [p for p in params.values() if p.requires_grad and p.numel() >= 4096]  # bnb keeps small ones 32-bit
    assert big and all(opt.state[p]["state1"].dtype == torch.uint8 for p in big)  # 8-bit optimizer state
    ro2 = generate_rollouts(model, tok, [build_prompt(tok, "2+2?")], 2, max_new_tokens=4)  # still generates
    assert ro2.completion_ids.shape[0] == 2


@pytest.mark.cuda
def test_cuda_full_width_twin_layer_on_gpu(tmp_path):
    """The 3B twin's real width (2 of its 36 layers), 4-bit, r=64, 8-bit AdamW on a GPU: scripts/gpu_step.py's
    capped step (generation, update, one evaluation call), each phase's peaks beside the planner's (the 3B's
    stored terms, which do not depend on the depth)."""
    from conftest import load_script
    from minipods.measure.activations import STORED
    from minipods.measure.plan import PlanConfig

    (tmp_path / "terms.json").write_text(json.dumps(STORED["Qwen/Qwen2.5-3B-Instruct"]))
    pc = PlanConfig(model="Qwen/Qwen2.5-3B-Instruct:layers=2", prompts_per_step=1, n=4, m=4, max_prompt_tokens=32,
                    max_new_tokens=32, eval_batch_size=4, eval_max_new_tokens=32, terms=str(tmp_path / "terms.json"))
    res = load_script("gpu_step").measure_phases(pc, "cuda")
    assert res["generated_shape"] == [32, 32] and res["device"] != "cpu" and res["verdict"] in ("PASS", "FAIL")
    assert all(0 < x["allocated"] <= x["reserved"] <= x["device_used"] and x["predicted"] > 0
               for x in res["phases"].values())


def test_consumer_preset_is_the_paper_recipe_scaled_to_a_small_card():
    from minipods.train import make_config
    c, p = make_config("consumer"), make_config("paper")
    assert (c.model, c.quantize, c.data, c.n, c.m, c.micro_batch_size, c.gen_batch_size) == \
        ("Qwen/Qwen2.5-1.5B-Instruct", "4bit", "gsm8k", 16, 4, 2, 32)
    same = ("lora_r", "lora_alpha", "lr", "max_grad_norm", "weight_decay", "temperature", "max_new_tokens",
            "max_prompt_tokens", "gradient_checkpointing", "optimizer")
    assert all(getattr(c, k) == getattr(p, k) for k in same)
    g = make_config("consumer", method="grpo")
    assert (g.n, g.m) == (4, 4)  # the GRPO arm updates on the same 4 rollouts per prompt
    assert twin_config(c.model).num_hidden_layers == 28  # its twin exists: `--model random:` + c.model
