"""Test-session settings: never reach for the network, and make the data path absolute so that
notebooks and subprocesses started from other folders find GSM8K too."""
import os
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
if os.environ.get("MINIPODS_GSM8K_DIR"):
    os.environ["MINIPODS_GSM8K_DIR"] = str(Path(os.environ["MINIPODS_GSM8K_DIR"]).resolve())
