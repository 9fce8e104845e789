"""Every command's bad input: exit 2, one line on stderr naming what is wrong, nothing on stdout, nothing written.

One table for the package's commands and the scripts that take flags; each row is (command, argv, what the line
must say). A command reports either through argparse (`python -m minipods.X: error: ...`) or through cli.fail
(`minipods.X: error: ...`): both end in `<name>: error: `.
"""

import pytest

from conftest import load_script
from minipods import evaluate, train
from minipods.analysis import compare, plots
from minipods.measure import bench, plan
from minipods.twins.arch import TWIN_CONFIGS

COMMANDS = {
    "minipods.train": lambda: train.main,
    "minipods.evaluate": lambda: evaluate.main,
    "minipods.compare": lambda: compare.main,
    "minipods.plots": lambda: plots.main,
    "minipods.bench": lambda: bench.main,
    "minipods.plan": lambda: plan.main,
    "scripts/gpu_check.py": lambda: load_script("gpu_check").main,
    "scripts/gpu_kit.py": lambda: load_script("gpu_kit").main,
    "scripts/trl_pods.py": lambda: load_script("trl_pods").main,
    "scripts/logprob_memory.py": lambda: load_script("logprob_memory").main,
    "notebooks/exercises.py": lambda: load_exercises().main,
    "scripts/class_kit.py": lambda: load_script("class_kit").main,
}


def load_exercises():
    """notebooks/exercises.py as a notebook imports it (tests/test_exercises.py loads it the same way)."""
    import importlib.util
    import sys
    from pathlib import Path
    if "exercises" not in sys.modules:
        spec = importlib.util.spec_from_file_location("exercises", Path(__file__).resolve().parent.parent / "notebooks" / "exercises.py")
        sys.modules["exercises"] = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(sys.modules["exercises"])
    return sys.modules["exercises"]

NARROW = "random:Qwen/Qwen2.5-0.5B-Instruct:hidden=128,intermediate=320,heads=4,kv_heads=2,layers=2,vocab=512"

CASES = [
    ("minipods.train", ["--n", "4", "--m", "8"], "--m (8) must not exceed --n (4)"),
    ("minipods.train", ["--m", "0"], "--m must be >= 1"),
    ("minipods.train", ["--rule", "median"], "--rule must be one of"),
    ("minipods.train", ["--method", "ppo"], "--method must be one of grpo, pods"),
    ("minipods.train", ["--method", "grpo", "--n", "8", "--m", "4"], "must equal --n"),
    ("minipods.train", ["--model", "/nonexistent/model-dir"], "model path not found"),
    ("minipods.train", ["--model", "missing.gguf"], "GGUF file not found"),
    ("minipods.train", ["--model", "random:nope"], "unknown twin 'nope'; known: " + ", ".join(TWIN_CONFIGS)),
    ("minipods.train", ["--small", "--preset", "paper"], "conflicts"),
    ("minipods.train", ["--synthetic-level", "5"], "--synthetic-level must be 0, 1 or 2"),
    ("minipods.train", ["--loss-type", "token"], "--loss-type must be one of dapo, grpo"),
    ("minipods.train", ["--eval-every-s", "-1"], "--eval-every-s"),
    ("minipods.train", ["--lr", "x"], "argument --lr: invalid float value: 'x'"),
    ("minipods.train", ["--device", "mps"], "--device must be auto, cpu, cuda or cuda:N (mps is not supported), got 'mps'"),
    ("minipods.train", ["--device", "cuda:x"], "--device must be auto, cpu, cuda or cuda:N"),
    ("scripts/gpu_kit.py", [], "give one of --dry-run or --download"),
    ("scripts/gpu_kit.py", ["--dry-run", "--cuda", "12"], "--cuda must be CUDA releases such as 12.8,13.0, got '12'"),
    ("minipods.evaluate", ["--limit", "-1"], "--limit must be >= 0"),
    ("minipods.evaluate", ["--samples", "0"], "--samples must be >= 1"),
    ("minipods.evaluate", ["--samples", "2", "--temperature", "0"], "use --temperature > 0 with --samples > 1"),
    ("minipods.evaluate", ["--temperature", "-1"], "--temperature must be >= 0"),
    ("minipods.evaluate", ["--data", "bogus"], "--data must be one of gsm8k, synthetic"),
    ("minipods.evaluate", ["--max-new-tokens", "0"], "--max-new-tokens must be >= 1"),
    ("minipods.evaluate", ["--adapter", "/no/such/adapter"], "no adapter_config.json there"),
    ("minipods.evaluate", ["--model", "/no/such/model"], "model path not found"),
    ("minipods.evaluate", ["--quantize", "8bit"], "--quantize must be one of none, 4bit"),
    ("minipods.evaluate", ["--bogus"], "unrecognized arguments: --bogus"),
    ("minipods.evaluate", ["--limit", "x"], "argument --limit: invalid int value: 'x'"),
    ("minipods.compare", ["--arms", "grpo,bogus"], "unknown arm(s) bogus"),
    ("minipods.compare", ["--n", "2", "--m", "4"], "--m (4) must not exceed --n (2)"),
    ("minipods.compare", ["--small", "--preset", "paper"], "--small conflicts with --preset paper"),
    ("minipods.compare", ["--small", "--preset", "small"], "--small conflicts with --preset small"),
    ("minipods.compare", ["--lr", "x"], "argument --lr: invalid float value: 'x'"),
    ("minipods.compare", ["--arms", ""], "nothing to run"),
    ("minipods.compare", ["--model", "/no/such/model"], "model path not found"),
    ("minipods.compare", ["--seeds", "a,b"], "--seeds must be comma-separated integers"),
    ("minipods.compare", ["--seeds", "0,0"], "--seeds needs distinct non-negative integers"),
    ("minipods.compare", ["--seed", "1", "--seeds", "0,1"], "give either --seed or --seeds"),
    ("minipods.compare", ["--merge", "/no/such"], "neither a seed folder"),
    ("minipods.compare", ["--audit", "/no/such"], "neither a seed folder"),
    ("minipods.compare", ["--audit", "/no/such", "--steps", "0"], "--steps must be >= 1, got 0"),
    ("minipods.compare", ["--audit", "/no/such", "--lr", "1e-3"], "--merge and --audit take only the folders"),
    ("minipods.plots", ["/no/such/dir"], "not a folder"),
    ("minipods.bench", ["--n", "abc"], "argument --n: invalid int value: 'abc'"),
    ("minipods.bench", ["--n", "0"], "--n must be >= 1, got 0"),
    ("minipods.bench", ["--m-values", "2,x"], "expected comma-separated integers"),
    ("minipods.bench", ["--dtype", "fp8"], "--dtype must be one of"),
    ("minipods.bench", ["--speed-n", "0"], "--speed-n must be >= 1, got 0"),
    ("minipods.bench", ["--parts", "update", "--m-values", "32", "--n", "16"], "the update part needs >= 2 --m-values"),
    ("minipods.bench", ["--parts", "select", "--repeats", "1.5"], "argument --repeats: invalid int value: '1.5'"),
    ("minipods.bench", ["--parts", "select,nope"], "unknown part(s)"),
    ("minipods.plan", ["--model", "Qwen/Qwen2.5-7B-Instruct"], "unknown"),
    ("minipods.plan", ["--model", NARROW], f"no stored terms for {NARROW} (4bit): measure them with python "
     "scripts/measure_terms.py"),
    ("minipods.plan", ["--n", "4", "--m", "8"], "must not exceed"),
    ("minipods.plan", ["--quantize", "8bit"], "--quantize"),
    ("minipods.plan", ["--gpu-gb", "0"], "--gpu-gb"),
    ("minipods.plan", ["--optimizer", "sgd"], "--optimizer"),
    ("minipods.plan", ["--preset", "small"], "--preset"),
    ("minipods.plan", ["--eval-batch-size", "0"], "--eval-batch-size must be >= 1"),
    ("minipods.plan", ["--eval-max-new-tokens", "-1"], "--eval-max-new-tokens must be >= 0"),
    ("scripts/gpu_check.py", ["--check", "step"], "--check must be one of learn, fp16, greedy"),
    ("scripts/trl_pods.py", ["--num_generations", "4", "--pods_m", "5", "--use_cpu"],
     "pods_m must be an integer in [2, num_generations=4], got 5"),
    ("scripts/trl_pods.py", ["--pods_m", "two"], "argument --pods_m/--pods-m: invalid int value: 'two'"),
    ("scripts/logprob_memory.py", ["--logprob-batch", "0"], "--logprob-batch must be >= 1, got 0"),
    ("notebooks/exercises.py", ["--release"], "--release takes one argument, the output folder"),
    ("scripts/class_kit.py", [], "takes one argument, the output folder"),
    ("scripts/class_kit.py", ["--out", "kit"], "takes one argument, the output folder"),
    ("notebooks/exercises.py", ["--grade", "--out", "g.csv"], "no submission given"),
    ("notebooks/exercises.py", ["--grade", "alice.ipynb", "--out", "g.csv"], "submission alice.ipynb does not exist"),
    ("notebooks/exercises.py", ["--grade", "."], "--out CSV is required"),
    ("notebooks/exercises.py", ["--grade", ".", "--out", "g.csv", "--seed", "x"], "--seed and --jobs take integers"),
    ("notebooks/exercises.py", ["--grade", ".", "--out", "g.csv", "--timeout", "0"], "--timeout > 0"),
    ("notebooks/exercises.py", ["--grade", ".", "--out", "no/g.csv"], "not a file in an existing folder"),
]


@pytest.mark.parametrize("name, argv, says", CASES, ids=[f"{c[0]} {' '.join(c[1])}" for c in CASES])
def test_bad_input_exits_2_with_one_line_and_writes_nothing(name, argv, says, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)  # a default output folder (runs/...) would land here
    out = ["--output-dir", str(tmp_path / "out")] if name in ("minipods.train", "minipods.compare") else \
        ["--output_dir", str(tmp_path / "out")] if name == "scripts/trl_pods.py" else []
    try:
        rc = COMMANDS[name]()(argv + out)
    except SystemExit as e:  # argparse inside a main that does not catch it
        rc = e.code
    got = capsys.readouterr()
    lines = got.err.splitlines()
    assert rc == 2
    assert len(lines) == 1 and "Traceback" not in got.err, got.err
    assert f"{name}: error: " in lines[0] and says in lines[0], lines[0]
    assert got.out == ""
    assert list(tmp_path.iterdir()) == [], "a refused command wrote files"
