"""Test-session settings: never reach for the network, and make the data path absolute so that
notebooks and subprocesses started from other folders find GSM8K too."""
import os
from pathlib import Path

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
    import pytest
    import torch
    if not torch.cuda.is_available():
        for it in cuda_items:
            it.add_marker(pytest.mark.skip(reason="needs a CUDA GPU"))
