"""A run folder is data, never code.

Students pass run folders around: a checkpoint to resume, an adapter to evaluate. A file in one that
is not what its name claims (a trainer.pt carrying a pickled object, adapter weights that are a
pickle, a state.json without a step) is refused with one line and exit 2, before anything is taken
from it: the payloads below would create a file if they ran, and the folder is left as it was.
"""

import json
import os
import pickle
import random
import subprocess

import numpy as np
import pytest
import torch

import minipods.evaluate as ev
import minipods.train as T
from minipods import checkpoint as ck
from test_faults import run
from test_faults import tiny_cfg as faults_cfg



class Payload:
    """Unpickling this runs a shell command that creates `marker`."""

    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return os.system, (f"touch {self.marker}",)


def tiny_cfg(out, **kw):
    """test_faults' tiny run, cut to one step without evaluation unless asked."""
    return faults_cfg(out, **{"max_steps": 1, "eval_every": 0, **kw})


def snapshot(folder):
    """Every file's bytes, but the lock (it holds the pid of the last process that opened the folder)."""
    return {p.relative_to(folder): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file() and p.name != ck.LOCK_FILE}


def cli(module, *args):
    """`python -m module args`, run in this process through the module's main(argv)."""
    import contextlib
    import importlib
    import io
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        rc = importlib.import_module(module).main([str(a) for a in args])
    return subprocess.CompletedProcess(module, rc, "", err.getvalue())


@pytest.fixture(scope="module")
def one_step_run(tmp_path_factory):
    """A real run folder after one step (checkpoint/ and adapter/), copied fresh for each test."""
    out = tmp_path_factory.mktemp("base") / "run"
    run(tiny_cfg(out))
    return out


@pytest.fixture
def run_dir(one_step_run, tmp_path):
    import shutil
    dst = tmp_path / "run"
    shutil.copytree(one_step_run, dst)
    return dst


# ---------------------------------------------------------------- the trainer state is plain values
def test_rng_state_is_plain_values_and_round_trips_exactly(tmp_path):
    random.seed(3)
    np.random.seed(4)
    torch.manual_seed(5)
    random.gauss(0, 1), np.random.randn(3)  # leave a cached gaussian in both (gauss_next, has_gauss)
    assert random.getstate()[2] is not None and np.random.get_state()[3] == 1
    torch.save(ck.rng_state(), tmp_path / "rng.pt")
    assert torch.serialization.get_unsafe_globals_in_checkpoint(tmp_path / "rng.pt") == []
    want = (random.random(), random.gauss(0, 1), np.random.randn(5).tolist(), torch.rand(5).tolist())
    ck.set_rng_state(torch.load(tmp_path / "rng.pt", weights_only=True))
    got = (random.random(), random.gauss(0, 1), np.random.randn(5).tolist(), torch.rand(5).tolist())
    assert got == want


def test_a_checkpoint_holds_no_pickled_objects(run_dir):
    path = run_dir / "checkpoint" / "trainer.pt"
    assert torch.serialization.get_unsafe_globals_in_checkpoint(path) == []
    trainer = torch.load(path, weights_only=True)  # loads with torch's own safe loader, as it is
    assert set(trainer) == {"optimizer", "rng", "scaler"} and len(trainer["rng"]["numpy"]["key"]) == 624
    assert trainer["scaler"] == {}  # float32: no loss scale to keep


def test_a_numpy_array_in_trainer_pt_is_refused(tmp_path):
    """Only plain values are read: a numpy array (a pickled object) in the RNG state is refused, loaded never."""
    out = tmp_path / "run"
    run(tiny_cfg(out, max_steps=2, save_every=1))
    path = out / "checkpoint" / "trainer.pt"
    trainer = torch.load(path, weights_only=True)
    npy = trainer["rng"]["numpy"]
    trainer["rng"]["numpy"] = (npy["kind"], np.array(npy["key"], dtype=np.uint32), npy["pos"], npy["has_gauss"],
                               npy["cached_gaussian"])
    torch.save(trainer, path)
    with pytest.raises(ck.Refused, match="holds pickled Python objects .*numpy"):
        ck.load_trainer(path)


# ---------------------------------------------------------------- --resume refuses what is not data
def test_crafted_trainer_pt_runs_nothing_and_exits_2_via_the_cli(run_dir, tmp_path):
    marker = tmp_path / "pwned"
    torch.save({"optimizer": Payload(marker), "rng": {}}, run_dir / "checkpoint" / "trainer.pt")
    before = snapshot(run_dir)
    r = cli("minipods.train", "--resume", "--output-dir", run_dir, "--data", "synthetic", "--no-progress")
    assert not marker.exists(), "the checkpoint's payload ran"
    err = r.stderr.strip()
    assert r.returncode == 2 and err.count("\n") == 0 and "Traceback" not in err, err
    assert err.startswith("minipods.train: error: no whole checkpoint in")
    assert "checkpoint/trainer.pt holds pickled Python objects (posix.system)" in err and "delete" in err
    assert snapshot(run_dir) == before


@pytest.mark.parametrize("write, named", [
    (lambda p, m: p.write_bytes(pickle.dumps({"optimizer": Payload(m)})), "trainer.pt is not a readable torch.save"),
    (lambda p, m: torch.save({"optimizer": {"state": {}, "param_groups": []}, "rng": [Payload(m)]}, p),
     "trainer.pt holds pickled Python objects (posix.system)"),
    (lambda p, m: torch.save({"optimizer": {}, "rng": {"numpy": np.array([Payload(m)], dtype=object)}}, p),
     "numpy.dtype, numpy.ndarray, posix.system), not plain tensors"),
])
def test_other_crafted_trainer_files_are_refused(run_dir, tmp_path, capsys, write, named):
    marker = tmp_path / "pwned"
    write(run_dir / "checkpoint" / "trainer.pt", marker)
    before = snapshot(run_dir)
    rc = T.main(["--resume", "--output-dir", str(run_dir), "--data", "synthetic", "--no-progress"])
    err = capsys.readouterr().err.strip()
    assert not marker.exists()
    assert rc == 2 and err.count("\n") == 0 and named in err, err
    assert snapshot(run_dir) == before


@pytest.mark.parametrize("text, named", [
    ("[1, 2]", "state.json is not a JSON object with a step"),
    ('{"epoch": 3}', "state.json is not a JSON object with a step"),
    ('{"step": "1"}', "state.json is not a JSON object with a step"),
    ('{"step": 1, "elapsed_s": "x"}', "state.json: elapsed_s must be a number"),
    ("cos\nsystem\n(S'touch x'\ntR.", "state.json is not JSON"),
])
def test_a_state_json_without_a_step_is_refused(run_dir, capsys, text, named):
    (run_dir / "checkpoint" / "state.json").write_text(text)
    before = snapshot(run_dir)
    rc = T.main(["--resume", "--output-dir", str(run_dir), "--data", "synthetic", "--no-progress"])
    err = capsys.readouterr().err.strip()
    assert rc == 2 and err.count("\n") == 0 and named in err, err
    assert snapshot(run_dir) == before


def test_checkpoint_adapter_weights_that_are_a_pickle_are_refused(run_dir, tmp_path, capsys):
    marker = tmp_path / "pwned"
    torch.save({"w": Payload(marker)}, run_dir / "checkpoint" / "adapter" / ck.ADAPTER_WEIGHTS)
    before = snapshot(run_dir)
    rc = T.main(["--resume", "--output-dir", str(run_dir), "--data", "synthetic", "--no-progress"])
    err = capsys.readouterr().err.strip()
    assert not marker.exists()
    assert rc == 2 and err.count("\n") == 0 and "adapter_model.safetensors is not a safetensors file" in err, err
    assert snapshot(run_dir) == before


# ---------------------------------------------------------------- evaluate --adapter refuses pickles
def test_evaluate_adapter_with_a_pickled_bin_runs_nothing_and_exits_2_via_the_cli(run_dir, tmp_path):
    marker = tmp_path / "pwned"
    adapter = run_dir / "adapter"
    (adapter / ck.ADAPTER_WEIGHTS).unlink()
    torch.save({"base_model.model.x.lora_A.weight": Payload(marker)}, adapter / "adapter_model.bin")
    before = snapshot(run_dir)
    r = cli("minipods.evaluate", "--adapter", adapter, "--data", "synthetic", "--limit", "1", "--output", "")
    assert not marker.exists(), "the adapter's payload ran"
    err = r.stderr.strip()
    assert r.returncode == 2 and err.count("\n") == 0 and "Traceback" not in err, err
    assert err == (f"minipods.evaluate: error: {adapter} has no adapter_model.safetensors (only adapter_model.bin: "
                   "pickle, which minipods does not load); save the adapter as safetensors (peft's save_pretrained "
                   "does by default) and pass that folder")
    assert snapshot(run_dir) == before


@pytest.mark.parametrize("where", ["adapter", "run"])
def test_evaluate_adapter_safetensors_that_is_a_pickle_is_refused(run_dir, tmp_path, capsys, where):
    marker = tmp_path / "pwned"
    weights = run_dir / "adapter" / ck.ADAPTER_WEIGHTS
    weights.write_bytes(pickle.dumps(Payload(marker)))
    before = snapshot(run_dir)
    rc = ev.main(["--adapter", str(run_dir / "adapter" if where == "adapter" else run_dir), "--data", "synthetic",
                  "--limit", "1", "--output", ""])
    err = capsys.readouterr().err.strip()
    assert not marker.exists()
    assert rc == 2 and err.count("\n") == 0, err
    assert err.startswith(f"minipods.evaluate: error: {weights} is not a safetensors file") and "save the adapter" in err
    assert snapshot(run_dir) == before


def test_check_adapter_accepts_a_saved_adapter_and_refuses_a_bad_config(run_dir):
    assert ck.check_adapter(run_dir / "adapter") == run_dir / "adapter" / ck.ADAPTER_WEIGHTS
    (run_dir / "adapter" / "adapter_config.json").write_text(json.dumps([1]))
    with pytest.raises(ck.Refused, match="adapter_config.json is not a JSON object"):
        ck.check_adapter(run_dir / "adapter")
