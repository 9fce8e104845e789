"""A full disk loses nothing.

At the write points of a run (conftest.WritePoints: each file write, cut half-way as a short write would
leave it, each rename and adapter save) the disk is full: OSError(ENOSPC). The CLI must stop with one line
naming the folder and the error (exit 2), the last whole checkpoint and every complete metrics row must still
read back, and `--resume` (space freed) must end exactly where the uninterrupted run ends.
"""

import errno
import os

import pytest
import torch
from conftest import first_last_and_sample
from safetensors.torch import load_file

import minipods.train as T
from minipods import checkpoint as ck
from minipods.analysis.results import read_eval, read_rows
from minipods.checkpoint import eval_steps, read_log
from minipods.twins.tiny import tiny_policy

TIMING = {"rollout_s", "update_s", "step_s", "elapsed_s", "tokens_per_s", "peak_mem_mb", "eval_s"}
ARGS = dict(data="synthetic", n=4, m=2, prompts_per_step=2, max_new_tokens=8, max_steps=3, save_every=2, lr=5e-2,
            lora_r=4, lora_alpha=8, max_grad_norm=1.0, temperature=1.5, micro_batch_size=2, eval_every=2,
            eval_limit=2, eval_max_new_tokens=4, seed=0)
SAVED_AT = [None, 2, 3]  # the step of the newest whole checkpoint after 0, 1, 2 completed saves


def argv(out, *extra):
    flags = [f"--{k.replace('_', '-')}={v}" for k, v in ARGS.items()]
    return [*flags, "--output-dir", str(out), "--no-progress", *extra]


def strip(rows):
    return [{k: v for k, v in r.items() if k not in TIMING} for r in rows]


@pytest.fixture
def cli(monkeypatch, capsys):
    """`python -m minipods.train ARGV` in-process, on the tiny model; returns (exit status, stderr)."""
    monkeypatch.setattr(T, "load_policy", lambda *a, **k: tiny_policy(seed=0, lora_r=4, lora_alpha=8))

    def main(args):
        capsys.readouterr()
        rc = T.main(args)
        lines = capsys.readouterr().err.strip().splitlines()
        return rc, "\n".join(ln for ln in lines if not ln.startswith("minipods: using the SYNTHETIC"))  # a notice
    return main


@pytest.mark.slow  # a sweep of many tiny runs
def test_a_full_disk_at_the_write_points_loses_nothing(tmp_path, cli, write_points):
    assert cli(argv(tmp_path / "full"))[0] == 0
    names = [p for p in write_points.seen if not p.startswith("step:")]
    full = strip(read_rows(tmp_path / "full"))
    for kind, k in first_last_and_sample(names, 21, 2):  # each point's first and last, two seeded in between
        out = tmp_path / f"{kind.replace(':', '_').replace(' ', '_')}_{k}"
        write_points.watch(kind, k, OSError(errno.ENOSPC, os.strerror(errno.ENOSPC)))
        rc, err = cli(argv(out))
        seen = write_points.seen
        write_points.watch()
        where = f"{kind} #{k}"
        assert rc == 2 and err.count("\n") == 0, (where, err)
        assert err == (f"minipods.train: error: run in {out} stopped: No space left on device; its last whole "
                       "checkpoint and complete metrics rows are kept: free space (or fix the cause), then "
                       "continue with --resume"), where

        assert not [p for p in out.rglob("*") if p.name.endswith(".tmp")], where  # space given back
        # what was written before the failure reads back: the newest whole checkpoint, every complete row
        loaded = ck.load_checkpoint(out)
        saved = SAVED_AT[seen.count("rename checkpoint:after")]
        assert (loaded and loaded["state"]["step"]) == saved, where
        rows = strip(read_log(out / "metrics.jsonl"))
        assert rows == full[:len(rows)] and len(rows) >= (saved + 1 if saved else 0), where

        assert cli(argv(out, "--resume"))[0] == 0, where
        assert strip(read_rows(out)) == full, where
        assert eval_steps(out) == [0, 2, 3], where
        assert all(read_eval(out, s) == read_eval(tmp_path / "full", s) for s in (0, 2, 3)), where
        got = load_file(out / "adapter" / ck.ADAPTER_WEIGHTS)
        want = load_file(tmp_path / "full" / "adapter" / ck.ADAPTER_WEIGHTS)
        assert got.keys() == want.keys() and all(torch.equal(got[n], want[n]) for n in want), where
        assert not [p for p in out.rglob("*") if p.name.endswith(".tmp")], where


def test_a_safetensors_write_error_is_an_os_error(tmp_path, monkeypatch):
    """safetensors reports a full disk as SafetensorError, not OSError: the save turns it into one."""
    from safetensors import SafetensorError

    model, _ = tiny_policy(seed=0, lora_r=4, lora_alpha=8)
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad])
    ck.save_checkpoint(tmp_path, model, opt, {"step": 1})

    def full(*a, **k):
        raise SafetensorError("Error while serializing: I/O error: No space left on device (os error 28)")
    monkeypatch.setattr(model, "save_pretrained", full)
    with pytest.raises(ck.RunError, match=r"run in .* stopped: Error while serializing: I/O error: No space left on "
                                          r"device \(os error 28\) \(.*checkpoint.tmp/adapter/adapter_model"):
        with ck.stop_on_os_error(tmp_path):
            ck.save_checkpoint(tmp_path, model, opt, {"step": 2})
    assert ck.load_checkpoint(tmp_path)["state"]["step"] == 1
