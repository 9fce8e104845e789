"""Test-session settings: never reach for the network, and make the data path absolute so that
notebooks and subprocesses started from other folders find GSM8K too."""
import os
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
if os.environ.get("MINIPODS_GSM8K_DIR"):
    os.environ["MINIPODS_GSM8K_DIR"] = str(Path(os.environ["MINIPODS_GSM8K_DIR"]).resolve())


def pytest_collection_modifyitems(config, items):
    """Tests marked `cuda` need a CUDA GPU: skipped (with the reason) where there is none."""
    cuda_items = [it for it in items if it.get_closest_marker("cuda")]
    if not cuda_items:
        return
    import torch
    if not torch.cuda.is_available():
        for it in cuda_items:
            it.add_marker(pytest.mark.skip(reason="needs a CUDA GPU"))


def load_script(name: str):
    """A module of scripts/ (they are run as files, not installed): `load_script("repro")`."""
    import importlib.util
    import sys

    path = Path(__file__).resolve().parent.parent / "scripts" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"scripts_{name}", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def adapted_tiny(seed=0, std=0.02, dtype=None):
    """The tiny policy with a seeded non-zero LoRA B, so the adapter (and any folding of it, and its
    gradient) matters. Tests import it: `from conftest import adapted_tiny`."""
    import torch

    from minipods.twins.tiny import tiny_policy

    model, tok = tiny_policy(seed=seed)
    if dtype is not None:
        model.to(dtype)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "lora_B" in name:
                p.normal_(0, std, generator=torch.Generator().manual_seed(1))
    return model, tok


@pytest.fixture(scope="module")
def batch():
    """8 sampled rollouts of the tiny policy: 2 prompts x n = 4 (group-major)."""
    import torch

    from minipods.data import build_prompt
    from minipods.fast.rollouts import generate_rollouts
    from minipods.twins.tiny import tiny_policy

    model, tok = tiny_policy(seed=0)
    torch.manual_seed(0)
    prompts = [build_prompt(tok, q) for q in ["1+1?", "What is two plus three?"]]
    return generate_rollouts(model, tok, prompts, 4, max_new_tokens=24, temperature=1.0)
