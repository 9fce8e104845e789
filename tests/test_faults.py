"""No run is ever lost: kills at any point, torn files, damaged checkpoints, two processes, bad paths.

A "kill" is simulated in-process at a write point of a run (conftest.WritePoints: the package's own writes
and renames, reached by patching): a BaseException (not KeyboardInterrupt, so nothing is saved on the way
out, as with SIGKILL) half-way through a file write (a torn file), before or after a rename, as an adapter
save starts, or in a step after its rollouts or its update. After each kill the same command runs again with
--resume on a freshly built model (what survives is only what is on disk), and the end result must equal an
uninterrupted run.
"""

import json
import math
import os
import random
import signal
import subprocess
import sys
import textwrap

import pytest
import torch
from conftest import Kill, first_last_and_sample

import minipods.train as T
from minipods import checkpoint as ck
from minipods.analysis import compare
from minipods.grpo import group_advantages
from minipods.analysis.results import read_eval, read_rows
from minipods.checkpoint import RunError, eval_steps, read_log
from minipods.twins.tiny import tiny_policy

TIMING = {"rollout_s", "update_s", "step_s", "elapsed_s", "tokens_per_s", "peak_mem_mb", "eval_s"}
# every kind of point a run passes (3 steps, checkpoints at 2 and 3, evaluations at 0, 2 and 3)
POINTS = {"step:rollouts", "step:update", "append:torn", "atomic:torn", "rename atomic:before",
          "adapter checkpoint:start", "trainer.pt:torn", "state.json:torn", "rename checkpoint.old:before",
          "rename checkpoint.old:after", "rename checkpoint:before", "rename checkpoint:after",
          "adapter final:start", "rename adapter:before", "rename adapter:after"}


def tiny_cfg(out, **kw):
    base = dict(data="synthetic", n=4, m=2, prompts_per_step=2, max_new_tokens=8, max_steps=3, save_every=2,
                lr=5e-2, lora_r=4, lora_alpha=8, max_grad_norm=1.0, temperature=1.5, micro_batch_size=2,
                eval_every=2, eval_limit=2, eval_max_new_tokens=4, output_dir=str(out), progress=False, seed=0)
    base.update(kw)
    return T.make_config(None, **base)


def run(cfg):
    model, tok = tiny_policy(seed=0, lora_r=cfg.lora_r, lora_alpha=cfg.lora_alpha)
    T.train(cfg, model=model, tokenizer=tok)
    return model


def strip(rows):
    return [{k: v for k, v in r.items() if k not in TIMING} for r in rows]


def adapter_of(model):
    return {n: p.detach().clone() for n, p in model.named_parameters() if "lora_" in n}


@pytest.mark.slow  # a sweep of many tiny runs
def test_kills_anywhere_then_resume_equal_an_uninterrupted_run(tmp_path, write_points):
    full_model = run(tiny_cfg(tmp_path / "full"))
    names = list(write_points.seen)
    full = read_rows(tmp_path / "full")
    assert set(names) == POINTS

    # A fresh run killed at each kind of point (a step's two: first and last occurrence; a write point's: the
    # first or the last, seeded: test_disk_full sweeps both) and at two seeded points in between, resumed and
    # killed again at a seeded point of any kind, then resumed to the end.
    rng = random.Random(1234)
    cases = [(kind, k) for kind, k in first_last_and_sample(names, 1234, 2) if kind.startswith("step:")]
    cases += [(kind, rng.choice(sorted({1, names.count(kind)}))) for kind in sorted(POINTS) if not kind.startswith("step:")]
    cases += rng.sample([(kind, k) for kind in sorted(POINTS) for k in range(2, names.count(kind))], 2)
    for i, (kind, k) in enumerate(cases):
        out = tmp_path / str(i)
        write_points.watch(kind, k, Kill(kind))
        with pytest.raises(Kill, match=kind):  # a fresh run meets the same points as the full one
            run(tiny_cfg(out))
        write_points.watch(None, rng.randint(1, len(names) // 2), Kill("again"))
        try:
            run(tiny_cfg(out, resume=True))
        except Kill:
            pass
        write_points.watch()
        model = run(tiny_cfg(out, resume=True))
        where = f"{kind} #{k}"
        assert strip(read_rows(out)) == strip(full), where
        # one per-question file per evaluation, each whole and equal to the uninterrupted run's
        assert eval_steps(out) == eval_steps(tmp_path / "full") == [0, 2, 3], where
        assert all(read_eval(out, s) == read_eval(tmp_path / "full", s) for s in (0, 2, 3)), where
        got, want = adapter_of(model), adapter_of(full_model)
        assert all(torch.equal(got[n], want[n]) for n in want), where
        assert json.loads((out / "checkpoint" / "state.json").read_text())["step"] == 3


def test_torn_last_line_is_dropped_on_resume_and_nothing_else(tmp_path):
    run(tiny_cfg(tmp_path / "full", max_steps=4, eval_every=0))
    full = read_rows(tmp_path / "full")
    out = tmp_path / "cut"
    run(tiny_cfg(out, max_steps=2, eval_every=0))  # checkpoint at step 2
    with (out / "metrics.jsonl").open("a") as f:
        f.write('{"step": 3, "rollout_s": 1.2, "rew')  # a kill in the middle of step 3's append
    with pytest.raises(RunError, match="metrics.jsonl:3"):
        read_log(out / "metrics.jsonl", drop_torn_tail=False)
    run(tiny_cfg(out, max_steps=4, eval_every=0, resume=True))
    assert strip(read_rows(out)) == strip(full)


def test_a_damaged_middle_line_is_refused_not_dropped(tmp_path):
    p = tmp_path / "metrics.jsonl"
    p.write_text('{"step": 1}\n{"step": 2, "x\n{"step": 3}\n')
    with pytest.raises(RunError, match=r"metrics.jsonl:2 is not valid JSON"):
        read_log(p)
    p.write_text('{"step": 1}\n{"step": 2, "x')
    assert read_log(p) == [{"step": 1}]


def test_truncated_checkpoint_falls_back_to_the_older_whole_one(tmp_path):
    import shutil

    run(tiny_cfg(tmp_path / "full", max_steps=3, save_every=1, eval_every=0))
    run(tiny_cfg(tmp_path / "one", max_steps=1, save_every=1, eval_every=0))
    out = tmp_path / "cut"
    run(tiny_cfg(out, max_steps=2, save_every=1, eval_every=0))
    # the step-1 checkpoint survives as checkpoint.old; the newest one (step 2) is truncated
    shutil.copytree(tmp_path / "one" / "checkpoint", out / "checkpoint.old")
    p = out / "checkpoint" / "trainer.pt"
    p.write_bytes(p.read_bytes()[: p.stat().st_size // 3])
    loaded = ck.load_checkpoint(out)
    assert loaded["path"].name == "checkpoint.old" and loaded["state"]["step"] == 1
    run(tiny_cfg(out, max_steps=3, save_every=1, eval_every=0, resume=True))  # redoes step 2, then 3
    assert strip(read_rows(out)) == strip(read_rows(tmp_path / "full"))


def test_no_whole_checkpoint_exits_2_with_one_line(tmp_path, capsys):
    out = tmp_path / "run"
    run(tiny_cfg(out, max_steps=1, eval_every=0))
    p = out / "checkpoint" / "trainer.pt"
    p.write_bytes(p.read_bytes()[:100])
    capsys.readouterr()  # the first run's output (its synthetic-task notice)
    rc = T.main(["--resume", "--output-dir", str(out), "--data", "synthetic", "--no-progress"])
    err = capsys.readouterr().err.strip()
    assert rc == 2 and err.count("\n") == 0, err
    assert "trainer.pt" in err or "checkpoint" in err
    assert err.startswith("minipods.train: error: no whole checkpoint in") and "delete" in err


@pytest.mark.parametrize("make_bad", ["file", "under_file"])
def test_output_path_that_is_a_file_exits_2(tmp_path, capsys, make_bad):
    f = tmp_path / "taken"
    f.write_text("not a folder")
    target = f if make_bad == "file" else f / "sub"
    assert T.main(["--output-dir", str(target), "--data", "synthetic"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("minipods.train: error: output path") and "\n" not in err and "Traceback" not in err


HOLDER = textwrap.dedent("""
    import sys, time
    from minipods.checkpoint import RunLock
    with RunLock(sys.argv[1]):
        print("locked", flush=True)
        time.sleep(60)
""")


def test_one_process_per_run_folder_and_a_killed_holder_is_taken_over(tmp_path, capsys):
    out = tmp_path / "run"
    out.mkdir()
    env = dict(os.environ, PYTHONPATH=os.getcwd())
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(out)], stdout=subprocess.PIPE, text=True, env=env)
    try:
        assert holder.stdout.readline().strip() == "locked"
        assert T.main(["--output-dir", str(out), "--data", "synthetic", "--no-progress"]) == 2
        err = capsys.readouterr().err.strip()
        assert f"pid {holder.pid}" in err and "\n" not in err
        with pytest.raises(RunError, match=f"pid {holder.pid}"):
            compare.run_comparison(out, arms=["grpo"], log=lambda *a: None, data="synthetic", max_steps=1)
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()
    with ck.RunLock(out):  # the kernel released the dead holder's lock
        assert (out / ck.LOCK_FILE).read_text() == str(os.getpid())
    with ck.RunLock(out):  # and it is released again on exit
        pass


def test_all_equal_groups_get_exactly_zero_advantage():
    from minipods.rewards import FORMAT_TAG_REWARD

    values = sorted({c + f * FORMAT_TAG_REWARD for c in (0.0, 1.0) for f in range(5)})  # every reward we give
    for size in (2, 3, 4, 7, 8, 16, 64):
        rewards = torch.tensor([v for v in values for _ in range(size)])
        group = torch.arange(len(rewards)) // size
        adv = group_advantages(rewards, group)
        assert torch.count_nonzero(adv) == 0, (size, adv.abs().max())
    # sixteen 0.1s: the float32 mean is one ulp off, so a std > 0 test would give -7.45e-5
    r = torch.full((16,), 0.1)
    assert float(r.std()) > 0 and torch.equal(group_advantages(r, torch.zeros(16, dtype=torch.long)), torch.zeros(16))
    mixed = group_advantages(torch.tensor([0.1, 0.1, 1.1, 0.1]), torch.zeros(4, dtype=torch.long))
    assert mixed[2] > 0 > mixed[0]


@pytest.mark.slow  # a sweep of many tiny runs
def test_compare_survives_kills_anywhere(tmp_path, write_points):
    cfg = dict(data="synthetic", n=4, m=2, prompts_per_step=2, max_new_tokens=6, max_prompt_tokens=48, max_steps=3,
               eval_every=2, eval_limit=2, eval_max_new_tokens=4, save_every=2, device="cpu", progress=False)

    def factory(c):
        return tiny_policy(seed=0)

    compare.run_comparison(tmp_path / "full", model_factory=factory, log=lambda *a: None, **cfg)
    names = list(write_points.seen)
    rng = random.Random(7)
    kills = 0
    for _ in range(8):
        write_points.watch(None, rng.randint(1, len(names) // 2), Kill("compare"))
        try:
            compare.run_comparison(tmp_path / "cut", model_factory=factory, log=lambda *a: None, **cfg)
            break
        except Kill:
            kills += 1
    else:
        write_points.watch()
        compare.run_comparison(tmp_path / "cut", model_factory=factory, log=lambda *a: None, **cfg)
    assert kills >= 3
    for arm in ("grpo", "pods_max_variance"):
        assert strip(read_rows(tmp_path / "cut" / arm)) == strip(read_rows(tmp_path / "full" / arm))
        assert (tmp_path / "cut" / arm / compare.DONE).is_file()
    assert (tmp_path / "cut" / "summary.md").is_file()


def test_evaluate_rows_are_written_whole_or_not_at_all(tmp_path, write_points):
    from minipods.evaluate import write_rows

    p = tmp_path / "eval.jsonl"
    write_rows(p, [{"index": 0, "correct": 1}])
    for point in ("atomic:torn", "rename atomic:before"):
        write_points.watch(point, 1, Kill(point))
        with pytest.raises(Kill):
            write_rows(p, [{"index": i, "correct": 0} for i in range(100)])
        assert read_log(p) == [{"index": 0, "correct": 1}]  # the old file, whole


@pytest.mark.slow
def test_real_model_killed_and_resumed_equals_the_uninterrupted_run(tmp_path, write_points):
    """The --small preset on SmolLM2 itself (fast engine, the threads torch picks; shorter steps): 2 steps
    straight, against the same run killed after step 2's update and resumed. Every metric and the final adapter
    must agree bit for bit; the straight run also repeats steps in one process on several threads, which the
    shared-prompt update's old index backward did not survive. The one place the suite trains SmolLM2: the
    straight run's rows, config and adapter are checked as an end-to-end run."""
    from safetensors.torch import load_file

    def cfg(out, **kw):
        return T.make_config("small", max_steps=2, eval_every=0, save_every=1, output_dir=str(out), progress=False,
                             n=4, m=2, prompts_per_step=2, max_new_tokens=24, **kw)

    T.train(cfg(tmp_path / "full"))
    write_points.watch("step:update", 2, Kill("step 2"))
    with pytest.raises(Kill):
        T.train(cfg(tmp_path / "cut"))
    write_points.watch()
    T.train(cfg(tmp_path / "cut", resume=True))
    full, cut = read_rows(tmp_path / "full"), read_rows(tmp_path / "cut")
    assert [r["step"] for r in full] == [1, 2] and strip(cut) == strip(full)
    for r in full:
        assert r["tokens"] > 0 and r["rollout_s"] > 0 and r["update_s"] > 0 and r["skipped"] == 0
        assert 0 < r["update_tokens"] <= r["tokens"] and math.isfinite(r["loss"])
    conf = json.loads((tmp_path / "full" / "config.json").read_text())
    assert conf["data_source"].startswith("synthetic") and conf["model"] == "smollm2-135m-instruct"
    a, b = (load_file(str(tmp_path / run / "adapter" / ck.ADAPTER_WEIGHTS)) for run in ("full", "cut"))
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
