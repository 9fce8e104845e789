#!/usr/bin/env bash
# The GPU check, offline, for the ten minutes a GPU is lent: about six minutes end to end on a fast
# data-centre card, the decisive stages first, one verdict table at the end.
#
#   bash scripts/gpu_check.sh                          # from the repository root
#   GPU_CHECK_SLOWDOWN=4 bash scripts/gpu_check.sh     # a slower card: every limit and the budget x4
#   bash scripts/gpu_check.sh --dry-run                # here, before it travels: tree + kit under 64 MiB?
#
# What travels to a GPU machine without network (scripts/gpu_kit.py, docs/gpu.md "The GPU kit"): the working
# tree without studies/ and pilots/ (3.5 MiB) and .whl/ from `python scripts/gpu_kit.py --download` (33.4 MiB):
# bitsandbytes 0.50.2 trimmed to its CUDA 12.6/12.8/13.0 and CPU libraries, transformers 5.23.0, peft 0.21.2,
# tokenizers, safetensors, huggingface_hub (installed only where the machine's are older); not datasets or gguf.
#
# Stages (limit in seconds on a fast card; they sum to 355; a failing stage does not stop the later ones or the table):
#   setup    40  the packages: the carried wheels (.whl/: bitsandbytes, transformers, peft as pinned, and
#                tokenizers, huggingface_hub, safetensors where the machine's are older) into $SITE, no
#                network; without .whl/ the installed ones (requirements-colab.txt), the verdict says which;
#                versions against requirements.txt's pins; torch and the card printed; dtype auto's choice
#                for this card; one NF4 round trip on the GPU
#   twin     45  the 3B and 1.5B architecture twins built once (random weights, cached; ~9 GB written)
#   paper   100  `python scripts/gpu_step.py --preset paper --gpu-gb 24`: one step of the paper
#                recipe (1 prompt: n=64 -> m=16, 512 + 512 tokens) and one evaluation call (64 questions),
#                under a 24 GiB cap (set_per_process_memory_fraction; the whole card when it is smaller): per
#                phase, peak allocated, peak reserved and device-used memory beside the planner; PASS within 10%
#   consumer 80  the same for --preset consumer (2 prompts: n=16 -> m=4; evaluation 32 questions), 12 GiB cap
#   learn    40  the learning direction on the 3B twin: fixed rollouts, +-1 advantages, three updates
#                (this and the next two: `python scripts/gpu_check.py --check NAME`)
#   fp16     25  one update of the 4-bit 1.5B twin computing in float16, with the dynamic loss scale
#   greedy   25  fast vs plain engine, greedy, one prompt, 4-bit 1.5B twin: the same tokens
# GPU_CHECK_SLOWDOWN (default 1) multiplies every stage limit and the overall budget: one factor for a
# card slower than the data-centre cards the limits were sized for. Suggested, not yet measured (no GPU
# has run this check): 4 for a T4 (16 GB, ~320 GB/s, no bf16), 2 for a 24 GB card (RTX 3090/4090, A10,
# L4). A TIMEOUT row on a slow card is a limit, not a failure: run again with a larger factor.
# Without CUDA (a CPU: set GPU_CHECK_PAPER_MODEL / GPU_CHECK_CONSUMER_MODEL to shrunk twins) paper and
# consumer are skipped and the rest run. The table goes to stdout and, when $OUT is set, to
# $OUT/gpu_check.md, with each stage's log and JSON in $OUT/logs. Knobs: GPU_CHECK_SLOWDOWN,
# GPU_CHECK_BUDGET_S (overall before the slowdown, default 390: a stage that finds too little time left
# is skipped), GPU_CHECK_DEVICE (cuda:N, default cuda:0), GPU_CHECK_PAPER_MODEL, GPU_CHECK_CONSUMER_MODEL,
# WHL_DIR, PYTHON, SITE. A twin's text is noise: memory and mechanics only.
set -u
cd "$(dirname "$0")/.."
ROOT=$PWD
if [[ ${1:-} == --dry-run ]]; then
    exec "${PYTHON:-python3}" scripts/gpu_kit.py --dry-run
fi
PY=${PYTHON:-python3}
RES=${OUT:-/tmp/gpu_check}
LOG=$RES/logs
mkdir -p "$LOG"
: > "$LOG/status.tsv"
rm -f "$LOG"/*.json  # never a previous run's result in this table
WHL_DIR=${WHL_DIR:-.whl}
SITE=${SITE:-/tmp/site}
PAPER_MODEL=${GPU_CHECK_PAPER_MODEL:-random:Qwen/Qwen2.5-3B-Instruct}
CONSUMER_MODEL=${GPU_CHECK_CONSUMER_MODEL:-random:Qwen/Qwen2.5-1.5B-Instruct}
SLOWDOWN=${GPU_CHECK_SLOWDOWN:-1}
DEVICE=${GPU_CHECK_DEVICE:-cuda:0}
if ! [[ $SLOWDOWN =~ ^[0-9]+([.][0-9]+)?$ ]] || [[ $SLOWDOWN =~ ^0+([.]0*)?$ ]]; then
    echo "scripts/gpu_check.sh: GPU_CHECK_SLOWDOWN must be a positive number, got '$SLOWDOWN'" >&2
    exit 2
fi
if ! [[ $DEVICE =~ ^cuda(:[0-9]+)?$ ]]; then
    echo "scripts/gpu_check.sh: GPU_CHECK_DEVICE must be cuda or cuda:N, got '$DEVICE'" >&2
    exit 2
fi
scaled() { awk -v s="$1" -v f="$SLOWDOWN" 'BEGIN { printf "%d", s * f + 0.5 }'; }  # seconds x the slowdown
BUDGET=$(scaled "${GPU_CHECK_BUDGET_S:-390}")
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 HF_DATASETS_OFFLINE=1 TOKENIZERS_PARALLELISM=false PYTHONUNBUFFERED=1
export MINIPODS_CACHE=${MINIPODS_CACHE:-/tmp/minipods-cache}
export PYTHONPATH=$SITE:$ROOT${PYTHONPATH:+:$PYTHONPATH}
START=$(date +%s)

# stage NAME LIMIT_S CMD...: run CMD with a time limit (LIMIT_S x the slowdown, never past the overall
# budget), log to $LOG/NAME.log, record "NAME rc seconds" in status.tsv, print the log's tail.
stage() {
    local name=$1 limit left t0 rc
    limit=$(scaled "$2")
    shift 2
    left=$(( START + BUDGET - 10 - $(date +%s) ))  # 10 s kept for the table
    (( limit > left )) && limit=$left
    if (( limit < 15 )); then
        printf '%s\tno-time\t0\n' "$name" >> "$LOG/status.tsv"
        echo "== $name: skipped, overall budget spent"
        return
    fi
    echo "== $name (limit ${limit} s): $*"
    t0=$(date +%s)
    timeout --kill-after=5 "$limit" "$@" > "$LOG/$name.log" 2>&1
    rc=$?
    printf '%s\t%s\t%s\n' "$name" "$rc" "$(( $(date +%s) - t0 ))" >> "$LOG/status.tsv"
    tail -n 3 "$LOG/$name.log" | cut -c1-300
    echo "== $name: rc=$rc ($(( $(date +%s) - t0 )) s)"
}

setup() {
    # the carried wheels when .whl/ holds them (the pinned three always; a dependency wheel only where the
    # machine's own is older), else the packages already installed (a notebook: requirements-colab.txt)
    local wheels=()
    if compgen -G "$WHL_DIR/*.whl" > /dev/null; then
        mapfile -t wheels < <("$PY" - "$WHL_DIR" <<'EOF'
import importlib.metadata as md, pathlib, sys
from packaging.version import Version
for w in sorted(pathlib.Path(sys.argv[1]).glob("*.whl")):
    name, ver = w.name.split("-")[:2]
    try:
        have = Version(md.version(name))
    except md.PackageNotFoundError:
        have = None
    if name in ("bitsandbytes", "transformers", "peft") or have is None or have < Version(ver):
        print(w)
EOF
)
        echo "installing: ${wheels[*]}"
        mkdir -p "$SITE"
        "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$SITE" "${wheels[@]}" \
            || { echo "pip failed"; return 1; }
    else
        echo "no wheels in $WHL_DIR: using the installed packages"
    fi
    "$PY" - "$WHL_DIR" "$DEVICE" "${#wheels[@]}" <<'EOF'
import importlib.metadata as md, pathlib, platform, re, sys
import torch
whl, device, carried = pathlib.Path(sys.argv[1]), sys.argv[2], sys.argv[3] != "0"
print("python", platform.python_version(), "| torch", torch.__version__, "cuda", torch.version.cuda,
      "| available", torch.cuda.is_available())
pins = dict(re.findall(r"^([\w-]+)==(\S+)", pathlib.Path("requirements.txt").read_text(), re.M))
bad = []
for name in ("bitsandbytes", "transformers", "peft"):  # carried: the wheel's version, loaded from $SITE
    want = next(whl.glob(f"{name}-*.whl")).name.split("-")[1] if carried else pins[name]
    mod = __import__(name)
    print(f"{name} {mod.__version__} (pinned {want}) from {pathlib.Path(mod.__file__).parent.parent}")
    bad += [name] * (mod.__version__ != want)
for d in ("accelerate", "tokenizers", "huggingface_hub", "safetensors"):
    print(d, md.version(d))
from minipods.model import pick_dtype
if torch.cuda.is_available():
    p = torch.cuda.get_device_properties(torch.device(device))
    print(f"gpu {device} {p.name} {p.total_memory / 2**30:.1f} GiB, compute capability {p.major}.{p.minor}, "
          f"dtype auto: {pick_dtype('auto', device)}")
    import bitsandbytes as bnb
    x = torch.randn(256, 256, device=device, dtype=torch.bfloat16 if p.major >= 8 else torch.float16)
    q, st = bnb.functional.quantize_4bit(x, quant_type="nf4", compress_statistics=True)
    err = (bnb.functional.dequantize_4bit(q, st) - x).abs().mean().item()
    print(f"bnb nf4 round trip on {device}: mean abs error {err:.3f}")
    assert err < 0.2, err
source = "carried wheels (.whl/)" if carried else "installed packages (no .whl/)"
print(f"packages: {source}")
assert not bad, f"{source}: not the pinned versions: {bad}"
print("versions: PASS")
EOF
}

check() {  # check NAME ARGS...: one verdict, its JSON in $LOG/NAME.json (step: the planner against one capped step)
    local name=$1
    shift
    if [[ $1 == step ]]; then
        shift
        "$PY" scripts/gpu_step.py "$@" --device "$DEVICE" --output "$LOG/$name.json"
    else
        "$PY" scripts/gpu_check.py --check "$@" --device "$DEVICE" --output "$LOG/$name.json"
    fi
}

if "$PY" -c "import torch, sys; sys.exit(not torch.cuda.is_available())" 2> /dev/null; then CUDA=1; else CUDA=0; DEVICE=cpu; fi
export -f setup check
export PY WHL_DIR SITE LOG DEVICE
stage setup 40 bash -c setup
stage twin 45 "$PY" -c "import sys, time
from minipods.model import cache_dir
from minipods.twins.arch import twin_folder
for spec in sys.argv[1:]:
    t = time.time(); d = twin_folder(spec, cache_dir() / 'twins')
    print(f'twin {spec}: {sum(f.stat().st_size for f in d.iterdir()) / 1e9:.2f} GB in {time.time() - t:.0f} s')" \
    "$PAPER_MODEL" "$CONSUMER_MODEL"
if (( CUDA )); then
    stage paper 100 bash -c 'check paper step --preset paper --prompts-per-step 1 --gpu-gb 24'
    stage consumer 80 bash -c 'check consumer step --preset consumer --prompts-per-step 2 --gpu-gb 12'
else
    printf 'paper\tno-cuda\t0\nconsumer\tno-cuda\t0\n' >> "$LOG/status.tsv"
fi
stage learn 40 bash -c "check learn learn --model '$PAPER_MODEL'"
stage fp16 25 bash -c "check fp16 fp16 --model '$CONSUMER_MODEL'"
stage greedy 25 bash -c "check greedy greedy --model '$CONSUMER_MODEL'"

"$PY" - "$LOG" "$(( $(date +%s) - START ))" "$SLOWDOWN" <<'EOF' | tee "$RES/gpu_check.md"
import json, sys
from pathlib import Path
log, total, slowdown = Path(sys.argv[1]), sys.argv[2], sys.argv[3]
text = lambda n: (log / f"{n}.log").read_text(errors="replace") if (log / f"{n}.log").is_file() else ""
def tail(n):
    lines = [x.strip() for x in text(n).splitlines() if x.strip()]
    return (lines[-1][:250] if lines else "(empty log)") + f" (logs/{n}.log)"
def gib(b):
    return "-" if b is None else f"{b / 2**30:.2f}"
def detail(name, r):
    if r.get("check") == "step":
        return "; ".join(f"{ph}: planner {gib(x['predicted'])} GiB, allocated {gib(x['allocated'])} (x{x['ratio']:.3f}), "
                         f"reserved {gib(x['reserved'])}, device-used {gib(x['device_used'])}" for ph, x in r["phases"].items()) + \
            f" [{r['model']}, {r['prompts']} prompt(s) n={r['n']} -> m={r['m']}, eval {r['eval_batch']}, cap {r['cap_gib']:g} GiB]"
    return ", ".join(f"{k} {v:.3g}" if isinstance(v, float) else f"{k} {v}" for k, v in r.items()
                     if k not in ("check", "verdict", "device"))
rows = []
for line in (log / "status.tsv").read_text().splitlines():
    name, rc, secs = line.split("\t")
    run = {"0": "ok", "no-time": "no time left", "no-cuda": "skipped: no CUDA", "124": "TIMEOUT", "137": "TIMEOUT"}.get(rc, f"rc={rc}")
    try:
        r = json.loads((log / f"{name}.json").read_text())
        verdict, what = r["verdict"], detail(name, r) + f" ({r.get('device')})"
    except (OSError, ValueError, KeyError, TypeError):
        verdict = ("PASS" if rc == "0" else "FAIL") if name in ("setup", "twin") else ("-" if rc == "no-cuda" else "FAIL")
        lines = [x for x in text(name).splitlines() if x.startswith(("python", "bitsandbytes", "transformers", "peft", "gpu", "twin", "bnb", "packages"))]
        what = "; ".join(lines) if rc == "0" and lines else tail(name) if rc not in ("no-cuda", "no-time") else ""
    rows.append([name, run, secs, verdict, what])
print(f"## GPU check (total {total} s; stage limits x{slowdown})\n")
print("| stage | run | s | verdict | result |\n|---|---|---|---|---|")
for r in rows:
    print("| " + " | ".join(str(x).replace("|", "/") for x in r) + " |")
EOF
