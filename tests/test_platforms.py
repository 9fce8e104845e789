"""Other students' machines, simulated on this Linux CPU (issue 61): Windows (no fcntl, resource, os.pread/pwrite,
O_DIRECTORY, no opening a folder, no /proc), macOS's getrusage units, --device mps refused (tests/test_cli.py), and
float16's non-finite logits stopping a run with its whole steps saved."""

import json
import os
import subprocess
import sys
import textwrap
import types

import pytest
import torch
from conftest import load_script

import minipods.train as T
from minipods import checkpoint as ck
from minipods import memory
from minipods.analysis.results import read_rows
from minipods.fast.sampler import InverseCDFSampler
from minipods.twins.tiny import tiny_policy

TIMING = {"rollout_s", "update_s", "step_s", "elapsed_s", "tokens_per_s", "peak_mem_mb", "eval_s"}
# --small's first steps on the tiny model (its load replaced), with fewer and shorter rollouts and evaluation
SMALL = ["--small", "--n", "4", "--m", "2", "--prompts-per-step", "2", "--max-new-tokens", "8", "--eval-limit", "2",
         "--eval-max-new-tokens", "4", "--no-progress"]

WINDOWS = textwrap.dedent("""
    import contextlib, io, json, os, sys
    import psutil  # its Linux backend imports resource (its Windows one does not): loaded before resource goes
    sys.modules["fcntl"] = sys.modules["resource"] = None  # POSIX-only modules: ImportError, as on Windows
    for name in ("pread", "pwrite", "O_DIRECTORY"):
        delattr(os, name)
    real_open = os.open
    def windows_open(path, flags, *a, **kw):  # Windows cannot open a folder (so no fsync of one)
        if os.path.isdir(path):
            raise PermissionError(13, "Permission denied", str(path))
        return real_open(path, flags, *a, **kw)
    os.open = windows_open
    import shutil
    shutil._use_fd_functions = False  # as on Windows: rmtree walks by path, not by opening folders
    import filelock
    import minipods.memory, minipods.train as T
    from minipods import checkpoint as ck
    from minipods.twins.tiny import tiny_policy
    minipods.memory._vm_hwm_mb = lambda: None  # no /proc
    import minipods.learning_curve
    minipods.learning_curve.plot_learning_curve = lambda *a, **k: None  # not drawn, as in conftest
    T.load_policy = lambda *a, **kw: tiny_policy(seed=0, lora_r=kw["lora_r"], lora_alpha=kw["lora_alpha"])
    real_step = T.run_step
    def ctrl_c(*a):  # Ctrl-C as step 3 starts, once: the run saves step 2 and stops (exit 130)
        if a[-1] == 3:
            T.run_step = real_step
            raise KeyboardInterrupt
        return real_step(*a)
    small, full, cut = json.loads(sys.argv[1]), sys.argv[2], sys.argv[3]
    rc = [T.main(small + ["--max-steps", "3", "--output-dir", full])]
    T.run_step = ctrl_c
    rc += [T.main(small + ["--max-steps", "3", "--output-dir", cut]),
           T.main(small + ["--max-steps", "3", "--output-dir", cut, "--resume"])]
    err = io.StringIO()
    with ck.RunLock(cut), contextlib.redirect_stderr(err):
        rc.append(T.main(small + ["--max-steps", "4", "--output-dir", cut, "--resume"]))
    with ck.RunLock(cut):  # released on exit, taken again
        pass
    print(json.dumps({"rc": rc, "lock_err": err.getvalue(), "lock": filelock.FileLock.__name__, "pid": os.getpid()}))
""")


def test_windows_like_machine_runs_small_resumes_and_locks(tmp_path):
    """--small's first steps, a resume and the lock with fcntl, resource, os.pread/pwrite and O_DIRECTORY gone and
    folders unopenable: the resumed run equals the straight one, the lock refuses a second run in one line."""
    full, cut = tmp_path / "full", tmp_path / "cut"
    env = dict(os.environ, PYTHONPATH=os.getcwd(), OMP_NUM_THREADS="1")
    p = subprocess.run([sys.executable, "-W", "ignore", "-c", WINDOWS, json.dumps(SMALL), str(full), str(cut)],
                       capture_output=True, text=True, env=env, timeout=300)
    assert p.returncode == 0, p.stderr[-3000:]
    got = json.loads(p.stdout.strip().splitlines()[-1])
    assert got["rc"] == [0, 130, 0, 2] and got["lock"] == "SoftFileLock"  # filelock's fallback without fcntl
    err = got["lock_err"].strip()
    assert err == f"minipods.train: error: {cut} is in use by another minipods process (pid {got['pid']}); wait for it " \
        "or stop it, then run again"  # the pid from the soft lock's own marker
    rows, straight = read_rows(cut), read_rows(full)
    assert [r["step"] for r in rows] == [0, 1, 2, 3] and all(r["peak_mem_mb"] is None for r in rows[1:])  # unknown
    assert [{k: v for k, v in r.items() if k not in TIMING} for r in rows] == \
        [{k: v for k, v in r.items() if k not in TIMING} for r in straight]
    assert json.loads((cut / "checkpoint" / "state.json").read_text())["step"] == 3


@pytest.mark.parametrize("platform, maxrss, mib", [("darwin", 3 * 2**20, 3.0), ("linux", 3 * 1024, 3.0),
                                                    ("win32", None, None)])
def test_peak_memory_without_proc_in_each_platforms_units(monkeypatch, platform, maxrss, mib):
    """ru_maxrss is bytes on macOS and KiB on Linux; Windows has no resource module: the peak is None (null)."""
    fake = None if maxrss is None else types.SimpleNamespace(
        RUSAGE_SELF=0, getrusage=lambda _: types.SimpleNamespace(ru_maxrss=maxrss))
    monkeypatch.setitem(sys.modules, "resource", fake)
    monkeypatch.setattr(memory, "_vm_hwm_mb", lambda: None)
    monkeypatch.setattr(sys, "platform", platform)
    assert memory.peak_mb("cpu") == mib


@pytest.mark.parametrize("engine", ["fast", "plain"])
def test_non_finite_logits_stop_the_run_in_one_line_with_its_whole_steps_saved(tmp_path, monkeypatch, capsys, engine):
    """An inf in step 3's logits (float16 overflow, injected) is caught before sampling, by either engine (the fast
    sampler; the plain engine's logits processor): the run saves steps 1-2 (no save was due) and stops with one
    line naming --dtype float32; --resume then continues from step 3."""
    policies, at = [], {"step": 0, "poison": True}
    monkeypatch.setattr(T, "load_policy", lambda *a, **kw: policies.append(tiny_policy(seed=0, lora_r=4, lora_alpha=8))
                        or policies[-1])
    real_step, real_sample = T.run_step, InverseCDFSampler.__call__
    monkeypatch.setattr(T, "run_step", lambda *a: at.update(step=a[-1]) or real_step(*a))

    def poisoned(self, input_ids, scores):
        if at["step"] == 3:
            scores = scores.clone()
            scores[-1, 1] = float("inf")
        return real_sample(self, input_ids, scores)

    def poison_head(module, args, logits):  # the plain engine samples the model's own logits: poison those
        if at["step"] == 3 and at["poison"] and not torch.is_grad_enabled():
            logits = logits.clone()
            logits[-1, -1, 1] = float("inf")
        return logits

    def load_poisoned(*a, **kw):
        model, tok = real_load(*a, **kw)
        next(m for name, m in model.named_modules() if name.endswith("lm_head")).register_forward_hook(poison_head)
        return model, tok

    monkeypatch.setattr(InverseCDFSampler, "__call__", poisoned)
    out = tmp_path / "run"
    argv = ["--data", "synthetic", "--n", "4", "--m", "2", "--prompts-per-step", "2", "--max-new-tokens", "6",
            "--lora-r", "4", "--lora-alpha", "8", "--eval-every", "0", "--save-every", "10", "--max-steps", "3",
            "--output-dir", str(out), "--no-progress"] + (["--no-fast"] if engine == "plain" else [])
    if engine == "plain":
        real_load = T.load_policy
        monkeypatch.setattr(T, "load_policy", load_poisoned)
    assert T.main(argv) == 2
    *notice, err = capsys.readouterr().err.strip().splitlines()  # (the synthetic task's notice first)
    assert err.startswith("minipods.train: error: non-finite logits") and "--dtype float32" in err
    assert all(line.startswith("minipods: using the SYNTHETIC") for line in notice)
    saved = ck.load_checkpoint(out)
    assert saved["state"]["step"] == 2 and [r["step"] for r in read_rows(out)] == [1, 2]
    model = policies[-1][0]  # its adapter after step 2 (step 3 stopped before its update): what was saved
    lora = {n.replace(".default", ""): p for n, p in model.named_parameters() if "lora_" in n}
    assert lora and all(torch.equal(saved["adapter"][n], p.detach()) for n, p in lora.items())
    at.update(step=0, poison=False)
    monkeypatch.setattr(InverseCDFSampler, "__call__", real_sample)
    assert T.main(argv + ["--resume"]) == 0
    assert [r["step"] for r in read_rows(out)] == [1, 2, 3]


def test_torch_floor_is_the_one_transformers_accepts():
    """requirements-colab.txt's comment and pyproject's range name the torch below which the installed transformers
    disables torch (its import_utils says so)."""
    import inspect
    import re
    from pathlib import Path

    from transformers.utils import import_utils

    floor = re.search(r"PyTorch >= (\d+\.\d+) is required", inspect.getsource(import_utils)).group(1)
    root = Path(__file__).resolve().parent.parent
    assert f"torch >= {floor}:" in (root / "requirements-colab.txt").read_text()
    assert f'"torch>={floor}",' in (root / "pyproject.toml").read_text()


# ---------------------------------------------------------------- the GPU kit (scripts/gpu_kit.py)
def test_kit_arithmetic_leaves_studies_and_pilots_behind_and_counts_the_kit():
    kit = load_script("gpu_kit")
    MiB = 2**20
    files = {"studies/a/metrics.jsonl": 30 * MiB, "pilots/p.json": 6 * MiB, "minipods/x.py": 3 * MiB}
    p = kit.plan(files, {"bitsandbytes": 16 * MiB, "transformers": 13 * MiB})
    assert (p["tree"], p["total"], p["fits"]) == (3 * MiB, 32 * MiB, True)
    assert p["left_behind"] == {"studies/": 30 * MiB, "pilots/": 6 * MiB}
    assert not kit.plan(files, {"bitsandbytes": 61 * MiB})["fits"]  # 64 MiB exactly: over (strictly under is the rule)


def test_trimmed_bitsandbytes_wheel_keeps_the_named_cuda_and_cpu_libraries_and_a_matching_record(tmp_path):
    import zipfile

    kit = load_script("gpu_kit")
    libs = ["cuda118", "cuda128", "cuda130", "rocm64", "cpu"]
    names = [f"bitsandbytes/libbitsandbytes_{v}.so" for v in libs] + ["bitsandbytes/__init__.py"]
    record = "bitsandbytes-0.50.2.dist-info/RECORD"
    src, dst = tmp_path / "bnb.whl", tmp_path / "trimmed.whl"
    with zipfile.ZipFile(src, "w") as z:
        for n in names:
            z.writestr(n, n)
        z.writestr(record, "".join(f"{n},sha256=x,{len(n)}\n" for n in names) + f"{record},,\n")
    left = kit.trim_wheel(src, dst, ["12.8", "13.0"])
    assert sorted(left) == ["bitsandbytes/libbitsandbytes_cuda118.so", "bitsandbytes/libbitsandbytes_rocm64.so"]
    with zipfile.ZipFile(dst) as z:
        kept = sorted(n for n in z.namelist() if n != record)
        listed = sorted(line.split(",")[0] for line in z.read(record).decode().splitlines() if line != f"{record},,")
        assert z.read("bitsandbytes/libbitsandbytes_cuda128.so") == b"bitsandbytes/libbitsandbytes_cuda128.so"
    assert kept == listed == sorted(set(names) - set(left))


def test_this_tree_plus_the_recorded_kit_fits_the_gpu_machine():
    """The dry run's verdict on this checkout (`bash scripts/gpu_check.sh --dry-run`), with the kit's recorded sizes:
    the kit is requirements.txt's pins, and what travels stays under 64 MiB."""
    kit = load_script("gpu_kit")
    pins = kit.kit_pins()
    assert pins[:3] == ["bitsandbytes==0.50.2", "transformers==5.23.0", "peft==0.21.2"] and len(pins) == len(kit.KIT)
    p = kit.plan(kit.travelling_files(), kit.KIT_BYTES)
    assert p["fits"] and p["tree"] < 8 * 2**20, p  # without studies/ and pilots/ the tree is a few MiB
