#!/usr/bin/env bash
# The GPU check of the paper recipe, offline (issues 13, 22): one table, under 10 minutes on one GPU.
#
#   bash scripts/gpu_check.sh        # from the repository root, on a machine with a CUDA GPU
#
# Stages (each with its own time limit inside one overall budget; a failing stage does not stop
# the later ones or the table):
#   setup    bitsandbytes (and pytest, where missing) from the wheels carried in .whl/ into
#            /tmp/site, no network; then the versions of python, torch, transformers, peft, ...
#   tests    the `cuda`-marked tests (4-bit twin: generate + GRPO update + 8-bit AdamW)
#   twin     build the Qwen2.5-3B-Instruct architecture twin once (random weights, 6.2 GB cached)
#   bench    `python -m minipods.bench --parts cuda`: the paper update (4-bit, LoRA r=64, m=16 x
#            1024 tokens, gradient checkpointing, 8-bit AdamW): s/update, peak memory, fits 24 GB;
#            generation tokens/s for n=64 rollouts of one prompt
#   plan     `python -m minipods.measure.plan_check` for --preset paper (3B twin, 1 prompt: n=64 -> m=16,
#            64 rollouts in flight, micro-batch 4) and --preset consumer (1.5B twin, 2 prompts: n=16 -> m=4,
#            32 in flight, micro-batch 2): each phase's CUDA peak allocated beside the planner's
#            prediction (`python -m minipods.plan`, same settings), 512 + 512 tokens
#   train    3 steps of `python -m minipods.train --preset paper --model random:...` (synthetic
#            data, no evaluation; GPU_CHECK_PROMPTS prompts per step, default 1: n=64 -> m=16)
# The table goes to stdout and, when $OUT is set, to $OUT/gpu_check.md with the logs in $OUT/logs.
# Environment knobs: GPU_CHECK_BUDGET_S (overall seconds, default 570: one command of at most 10
# minutes; a stage that finds too little time left is skipped), GPU_CHECK_MODEL (the twin),
# GPU_CHECK_PROMPTS, GPU_CHECK_STEPS, GPU_CHECK_TRAIN_ARGS (extra train flags), WHL_DIR, PYTHON.
# A twin's text is noise: this measures memory and speed, never accuracy.
set -u
cd "$(dirname "$0")/.."
ROOT=$PWD
PY=${PYTHON:-python3}
RES=${OUT:-/tmp/gpu_check}
LOG=$RES/logs
mkdir -p "$LOG"
: > "$LOG/status.tsv"
WHL_DIR=${WHL_DIR:-.whl}
MODEL=${GPU_CHECK_MODEL:-random:Qwen/Qwen2.5-3B-Instruct}
BUDGET=${GPU_CHECK_BUDGET_S:-570}
RUN=/tmp/gpu_check_run
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 HF_DATASETS_OFFLINE=1 TOKENIZERS_PARALLELISM=false PYTHONUNBUFFERED=1
export MINIPODS_CACHE=${MINIPODS_CACHE:-/tmp/minipods-cache}
export PYTHONPATH=/tmp/site:$ROOT${PYTHONPATH:+:$PYTHONPATH}
START=$(date +%s)

# stage NAME LIMIT_S CMD...: run CMD with a time limit (never past the overall budget), log to
# $LOG/NAME.log, record "NAME rc seconds" in status.tsv, print the log's tail.
stage() {
    local name=$1 limit=$2 left t0 rc
    shift 2
    left=$(( START + BUDGET - 15 - $(date +%s) ))  # 15 s kept for the table
    (( limit > left )) && limit=$left
    if (( limit < 20 )); then
        printf '%s\tno-time\t0\n' "$name" >> "$LOG/status.tsv"
        echo "== $name: skipped, overall budget spent"
        return
    fi
    echo "== $name (limit ${limit} s): $*"
    t0=$(date +%s)
    timeout --kill-after=10 "$limit" "$@" > "$LOG/$name.log" 2>&1
    rc=$?
    printf '%s\t%s\t%s\n' "$name" "$rc" "$(( $(date +%s) - t0 ))" >> "$LOG/status.tsv"
    tail -n 4 "$LOG/$name.log" | cut -c1-300
    echo "== $name: rc=$rc ($(( $(date +%s) - t0 )) s)"
}

setup() {
    # bitsandbytes always from the carried wheel; pytest and its dependencies only where missing
    local wheels=("$WHL_DIR"/bitsandbytes-*.whl)
    if ! "$PY" -c "import pytest" 2>/dev/null; then
        wheels+=("$WHL_DIR"/pytest-*.whl "$WHL_DIR"/pluggy-*.whl "$WHL_DIR"/iniconfig-*.whl "$WHL_DIR"/pygments-*.whl)
        "$PY" -c "import sys; sys.exit(sys.version_info < (3, 11))" || \
            wheels+=("$WHL_DIR"/exceptiongroup-*.whl "$WHL_DIR"/tomli-*.whl)
        "$PY" -c "import packaging, sys; sys.exit(int(packaging.__version__.split('.')[0]) < 24)" 2>/dev/null || \
            wheels+=("$WHL_DIR"/packaging-*.whl)
    fi
    echo "installing: ${wheels[*]}"
    mkdir -p /tmp/site
    if ! "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site \
            "${wheels[@]}"; then
        echo "pip failed; unpacking the wheels (zip files) instead"
        for w in "${wheels[@]}"; do "$PY" -m zipfile -e "$w" /tmp/site || echo "could not unpack $w"; done
    fi
    "$PY" - <<'EOF'
import importlib.metadata as md, platform, subprocess
import torch
print("python", platform.python_version(), "| torch", torch.__version__, "cuda", torch.version.cuda,
      "| available", torch.cuda.is_available())
for d in ("transformers", "peft", "accelerate", "bitsandbytes", "safetensors", "tokenizers", "numpy", "pytest"):
    try:
        print(f"{d} {md.version(d)}")
    except md.PackageNotFoundError:
        print(f"{d} MISSING")
if torch.cuda.is_available():
    p = torch.cuda.get_device_properties(0)
    print(f"gpu {p.name} {p.total_memory / 2**30:.1f} GiB")
import bitsandbytes as bnb  # fails the stage when the carried wheel does not load
print("bnb loaded from", bnb.__file__)
if torch.cuda.is_available():  # one NF4 round trip on the GPU: the native CUDA library works
    x = torch.randn(256, 256, device="cuda", dtype=torch.bfloat16)
    q, st = bnb.functional.quantize_4bit(x, quant_type="nf4", compress_statistics=True)
    err = (bnb.functional.dequantize_4bit(q, st) - x).abs().mean().item()
    print(f"bnb nf4 round trip on cuda: mean abs error {err:.3f}")
    assert err < 0.2, err
EOF
}

# the planner against the CUDA peak of each phase, for the paper and the consumer recipe (one JSON each)
plan_check() {
    local rc=0
    "$PY" -m minipods.measure.plan_check --preset paper --prompts-per-step 1 --output "$RES/plan_paper.json" || rc=$?
    "$PY" -m minipods.measure.plan_check --preset consumer --prompts-per-step 2 --output "$RES/plan_consumer.json" || rc=$?
    return $rc
}

export -f setup plan_check
export PY WHL_DIR RES
stage setup 90 bash -c setup
TEST_FILES=$(grep -l "pytest.mark.cuda" tests/test_*.py | tr '\n' ' ')
# shellcheck disable=SC2086
stage tests 150 "$PY" -m pytest -q -m cuda -p no:cacheprovider -o addopts="" -rA $TEST_FILES
stage twin 150 "$PY" -c "import sys, time; t = time.time(); from minipods.twins.arch import twin_folder; \
d = twin_folder(sys.argv[1]); print(f'twin folder {d}: {sum(f.stat().st_size for f in d.iterdir()) / 1e9:.2f} GB \
in {time.time() - t:.0f} s')" "$MODEL"
stage bench 240 "$PY" -m minipods.bench --parts cuda --cuda-model "$MODEL" --output "$RES/bench_cuda.json"
rm -f "$RES"/plan_*.json  # never a previous run's result in this table
stage plan 200 bash -c plan_check
rm -rf "$RUN"
# shellcheck disable=SC2086
stage train 300 "$PY" -m minipods.train --preset paper --model "$MODEL" --data synthetic --eval-every 0 \
    --max-steps "${GPU_CHECK_STEPS:-3}" --prompts-per-step "${GPU_CHECK_PROMPTS:-1}" --save-every 1000 \
    --no-progress --output-dir "$RUN" ${GPU_CHECK_TRAIN_ARGS:-}
cp "$RUN/metrics.jsonl" "$RES/train_metrics.jsonl" 2>/dev/null

"$PY" - "$RES" "$RUN" "$MODEL" "$(( $(date +%s) - START ))" <<'EOF' | tee "$RES/gpu_check.md"
import json, re, sys
from pathlib import Path
res, run, model, total = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3], sys.argv[4]
log = lambda n: (res / "logs" / f"{n}.log").read_text(errors="replace") if (res / "logs" / f"{n}.log").is_file() else ""
status = {}
for line in (res / "logs" / "status.tsv").read_text().splitlines():
    name, rc, secs = line.split("\t")
    status[name] = ("ok" if rc == "0" else "no time left" if rc == "no-time" else
                    f"TIMEOUT" if rc in ("124", "137") else f"FAIL rc={rc}", secs)
def last(text, pat):
    m = re.findall(pat, text)
    return m[-1] if m else None
def tail(name):  # the last non-empty line of a stage's log (its error, when it failed)
    lines = [ln.strip() for ln in log(name).splitlines() if ln.strip()]
    return (lines[-1][:250] if lines else "(empty log)") + f" (logs/{name}.log)"
rows = []
setup = log("setup")
vers = [ln for ln in setup.splitlines() if re.match(r"^(python|transformers|peft|accelerate|bitsandbytes|gpu|bnb nf4) ", ln)]
rows.append(["setup", *status.get("setup", ("not run", "")), "; ".join(vers) or tail("setup")])
t = log("tests")
rows.append(["cuda tests (pytest -m cuda)", *status.get("tests", ("not run", "")),
             last(t, r"(?m)^=*\s*(\d+ (?:passed|failed|skipped|errors?|deselected)\b.*?)\s*=*$") or tail("tests")])
rows.append(["twin build", *status.get("twin", ("not run", "")), last(log("twin"), r"twin folder .*") or tail("twin")])
from_bench = tail("bench")
try:
    c = json.loads((res / "bench_cuda.json").read_text())["parts"]["cuda"]
    if "error" in c or "skipped" in c:
        from_bench = (c.get("error") or c.get("skipped"))[:300]
    else:
        from_bench = (f"{c['update_s']:.2f} s/update ({c['sequences']} seq x {c['settings']['seq_tokens']} tok, "
                      f"{c['optimizer']}), peak {c['peak_allocated_mb'] / 1024:.2f} GiB alloc / "
                      f"{c['peak_reserved_mb'] / 1024:.2f} GiB reserved, weights {c['weights_mb'] / 1024:.2f} GiB, "
                      f"fits 24 GB: {'PASS' if c['fits_24gb'] else 'FAIL'}; generate n={c['settings']['gen_n']} x "
                      f"{c['settings']['gen_tokens']}: {c['gen_tokens_per_s']:.0f} tok/s ({c['gen_tokens']} tok in "
                      f"{c['gen_s']:.1f} s); load {c['load_s']:.0f} s; paper step (128 seq) ~"
                      f"{c['update_s_per_sequence'] * 128:.0f} s/update")
except (OSError, ValueError, KeyError, TypeError) as e:
    from_bench += f" ({type(e).__name__})"
rows.append(["bench cuda (paper update + generation)", *status.get("bench", ("not run", "")), from_bench])
for preset in ("paper", "consumer"):  # the planner's peak beside the measured one, per phase
    try:
        c = json.loads((res / f"plan_{preset}.json").read_text())
        ph = c["phases"]
        got = "; ".join(f"{k}: planner {v['predicted'] / 2**30:.2f} GiB, measured {v['peak'] / 2**30:.2f} GiB "
                        f"(x{v['peak'] / v['predicted']:.3f})" for k, v in ph.items())
        got += (f"; weights + LoRA + optimizer: planner {c['static_predicted'] / 2**30:.2f} GiB, measured "
                f"{ph['update']['base'] / 2**30:.2f} GiB [{c['gpu']}]")
        what = f"plan vs CUDA: {preset} ({c['model']}, {c['prompts']} prompt(s), n={c['n']} -> m={c['m']})"
    except (OSError, ValueError, KeyError, TypeError) as e:
        got, what = tail("plan") + f" ({type(e).__name__})", f"plan vs CUDA: {preset}"
    rows.append([what, *status.get("plan", ("not run", "")), got])
steps = []
if (run / "metrics.jsonl").is_file():
    steps = [json.loads(x) for x in (run / "metrics.jsonl").read_text().splitlines() if x.strip()]
if steps:
    n = len(steps)
    mean = lambda k: sum(s[k] for s in steps) / n
    tr = (f"{n} steps: {mean('step_s'):.1f} s/step (rollout {mean('rollout_s'):.1f} s, update {mean('update_s'):.1f} s), "
          f"{mean('tokens_per_s'):.0f} gen tok/s, {mean('update_tokens'):.0f} update tokens/step, peak "
          f"{max(s['peak_mem_mb'] for s in steps) / 1024:.2f} GiB alloc, loss finite: "
          f"{all(s['loss'] == s['loss'] for s in steps)}, skipped {sum(s['skipped'] for s in steps)}")
else:
    tr = (last(log("train"), r"minipods\.train: error: .*") or tail("train"))[:300]
try:
    cfg = json.loads((run / "config.json").read_text())
    tr += f" [n={cfg['n']} m={cfg['m']} prompts/step={cfg['prompts_per_step']} {cfg['max_new_tokens']} new tok]"
except (OSError, ValueError, KeyError):
    pass
rows.append([f"train --preset paper ({model})", *status.get("train", ("not run", "")), tr])
print(f"## GPU check ({model}; total {total} s)\n")
print("| stage | status | s | result |\n|---|---|---|---|")
for r in rows:
    print("| " + " | ".join(str(x).replace("|", "/") for x in r) + " |")
EOF
