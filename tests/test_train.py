import json
import math
import os
import re
import subprocess
import sys

import pytest
import torch

import minipods.train as T
from minipods.checkpoint import save_checkpoint
from minipods.analysis.results import read_rows
from minipods.twins.tiny import tiny_policy

TIMING = {"rollout_s", "update_s", "step_s", "elapsed_s", "tokens_per_s", "peak_mem_mb"}


def tiny_cfg(out, **kw):
    base = dict(data="synthetic", n=4, m=2, prompts_per_step=2, max_new_tokens=10, max_steps=3, save_every=1,
                lr=5e-2, lora_r=4, lora_alpha=8, max_grad_norm=1.0, temperature=1.5, micro_batch_size=2,
                output_dir=str(out), progress=False, seed=0)
    base.update(kw)
    return T.make_config(None, **base)


def run(cfg, seed=0):
    model, tok = tiny_policy(seed=seed, lora_r=cfg.lora_r, lora_alpha=cfg.lora_alpha)
    T.train(cfg, model=model, tokenizer=tok)
    return model


def rows(out):
    return read_rows(out)


def strip(rs):
    return [{k: v for k, v in r.items() if k not in TIMING} for r in rs]


REQUIRED = ["step", "elapsed_s", "rollout_s", "update_s", "reward_mean", "reward_std", "kept_reward_mean",
            "kept_reward_std", "correct_frac", "format_frac", "zero_std_frac", "tokens_per_s", "peak_mem_mb", "loss",
            "grad_norm", "lr"]


def test_train_writes_metrics_config_and_adapter(tmp_path):
    cfg = tiny_cfg(tmp_path / "a", eval_every=2, eval_limit=3, eval_max_new_tokens=6)
    run(cfg)
    rs = rows(tmp_path / "a")
    train_rows = [r for r in rs if r["step"] > 0]
    assert [r["step"] for r in rs] == [0, 1, 2, 3]
    for r in train_rows:
        assert set(REQUIRED) <= set(r)
        assert len(r["kept_idx"]) == 2 and all(len(k) == 2 for k in r["kept_idx"])
        assert r["lr"] == pytest.approx(5e-2)
    assert [r["step"] for r in rs if "eval_accuracy" in r] == [0, 2, 3]  # before, every 2, after the last
    assert all(0 <= r["eval_accuracy"] <= 1 for r in rs if "eval_accuracy" in r)
    elapsed = [r["elapsed_s"] for r in train_rows]
    assert elapsed == sorted(elapsed) and elapsed[-1] == pytest.approx(sum(r["step_s"] for r in train_rows))
    conf = json.loads((tmp_path / "a" / "config.json").read_text())
    assert conf["data_source"] == "synthetic" and conf["n"] == 4 and conf["m"] == 2 and conf["method"] == "pods"
    assert (tmp_path / "a" / "adapter" / "adapter_config.json").is_file()
    assert json.loads((tmp_path / "a" / "checkpoint" / "state.json").read_text())["step"] == 3
    with pytest.raises(ValueError, match="already holds a run"):
        T.train(cfg, *tiny_policy())


def test_every_evaluation_writes_question_rows_and_the_run_ends_with_a_paired_line(tmp_path, capsys):
    from minipods.data import load_task
    from minipods.analysis.results import read_eval
    from minipods.analysis.stats import paired_difference
    from minipods.checkpoint import eval_steps

    cfg = tiny_cfg(tmp_path, max_steps=3, eval_every=2, eval_limit=5, eval_max_new_tokens=6)
    run(cfg)
    assert eval_steps(tmp_path) == [0, 2, 3]
    assert sorted(p.name for p in (tmp_path / "eval").iterdir()) == \
        ["step_00000.jsonl", "step_00002.jsonl", "step_00003.jsonl"]
    golds = [it["gold"] for it in load_task("synthetic", "test", limit=5, seed=0, notice=False)[0]]
    metrics = {r["step"]: r for r in rows(tmp_path) if "eval_accuracy" in r}
    for step in (0, 2, 3):
        ev = read_eval(tmp_path, step)
        assert [set(r) for r in ev] == [{"index", "gold", "pred", "correct"}] * 5
        assert [r["index"] for r in ev] == list(range(5)) and [r["gold"] for r in ev] == golds
        assert all(r["correct"] in (0, 1) and r["correct"] == int(r["pred"] == r["gold"]) for r in ev)
        assert metrics[step]["eval_accuracy"] == pytest.approx(sum(r["correct"] for r in ev) / 5)
    out = capsys.readouterr().out.strip().splitlines()
    m = re.fullmatch(r"eval accuracy (\d+\.\d)% -> (\d+\.\d)% \(([+-]\d+\.\d) points, paired 95% CI "
                     r"\[([+-]\d+\.\d), ([+-]\d+\.\d)\], (\d+) questions\)", out[-1])
    assert m, out[-1]
    first, last = read_eval(tmp_path, 0), read_eval(tmp_path, 3)
    want = paired_difference([r["correct"] for r in first], [r["correct"] for r in last])
    a, b, d, lo, hi, n = (float(x) for x in m.groups())
    assert (a, b, d, n) == (round(100 * want["acc_a"], 1), round(100 * want["acc_b"], 1),
                            round(100 * want["diff"], 1), 5)
    assert lo <= d <= hi and (lo, hi) == (round(100 * want["ci95"][0], 1), round(100 * want["ci95"][1], 1))
    png = (tmp_path / "learning_curve.png").read_bytes()
    assert png.startswith(b"\x89PNG") and len(png) > 10_000


def test_synthetic_notice_is_printed_once_per_run(tmp_path, capsys, recwarn):
    run(tiny_cfg(tmp_path, max_steps=1, eval_every=1, eval_limit=2, eval_max_new_tokens=4))
    err = capsys.readouterr().err
    assert err.count("SYNTHETIC") == 1 and "--data synthetic" in err  # train and test split: one notice
    assert "MINIPODS_GSM8K_DIR" not in err  # the task was chosen, not a fallback: nothing to set
    assert not [w for w in recwarn if "SYNTHETIC" in str(w.message)]


def _length_rewards(texts, golds):  # a deterministic reward with spread, for a random tiny model
    r = [(len(t) % 5) / 4 for t in texts]
    return {"reward": r, "correct": [0.0] * len(r), "format": [0.0] * len(r)}


def test_max_variance_keeps_the_extremes(tmp_path, monkeypatch):
    monkeypatch.setattr(T, "score_completions", _length_rewards)
    # with m = 2 max-variance keeps the lowest and the highest reward, whose spread bounds the std
    # of all n (Popoviciu: var <= range^2 / 4), so the kept std can never be below the full std
    cfg = tiny_cfg(tmp_path, n=6, m=2, max_steps=3, prompts_per_step=1)
    run(cfg)
    rs = rows(tmp_path)
    assert any(r["reward_std"] > 0 for r in rs)
    for r in rs:
        assert r["kept_reward_std"] >= r["reward_std"] - 1e-9
        assert r["grad_norm"] > 0 or r["kept_reward_std"] == 0  # (the loss value itself can be 0)


def test_same_seed_same_run_and_resume_after_interrupt(tmp_path, monkeypatch):
    run(tiny_cfg(tmp_path / "full", max_steps=4))
    full = rows(tmp_path / "full")
    # reproducible: kept indices and metrics identical for a second run with the same seed
    run(tiny_cfg(tmp_path / "again", max_steps=2))
    assert strip(rows(tmp_path / "again")) == strip(full[:2])

    # interrupt during step 3 (Ctrl-C): the checkpoint holds step 2, no row of step 3 exists
    real_step = T.run_step

    def interrupted(model, tok, opt, cfg, items, step):
        if step == 3:
            raise KeyboardInterrupt
        return real_step(model, tok, opt, cfg, items, step)

    monkeypatch.setattr(T, "run_step", interrupted)
    with pytest.raises(KeyboardInterrupt):
        run(tiny_cfg(tmp_path / "cut", max_steps=4, save_every=10))
    monkeypatch.setattr(T, "run_step", real_step)
    assert json.loads((tmp_path / "cut" / "checkpoint" / "state.json").read_text())["step"] == 2
    assert [r["step"] for r in rows(tmp_path / "cut")] == [1, 2]
    # a row written after the last checkpoint (a hard kill) is dropped on resume, never duplicated
    with (tmp_path / "cut" / "metrics.jsonl").open("a") as f:
        f.write(json.dumps({"step": 3, "stale": True}) + "\n")

    run(tiny_cfg(tmp_path / "cut", max_steps=4, resume=True), seed=123)  # weights come from the checkpoint
    resumed = rows(tmp_path / "cut")
    assert [r["step"] for r in resumed] == [1, 2, 3, 4]
    assert not any("stale" in r for r in resumed)
    # the resumed run continues exactly where the uninterrupted one went (adapter, optimizer, RNG restored)
    assert strip(resumed) == strip(full)
    assert resumed[3]["elapsed_s"] > resumed[1]["elapsed_s"]


def test_nonfinite_loss_skips_update_and_is_counted(tmp_path, monkeypatch):
    monkeypatch.setattr(T, "group_advantages", lambda r, g, eps=1e-4: torch.full_like(r, float("nan")))
    cfg = tiny_cfg(tmp_path, max_steps=2)
    model, tok = tiny_policy(lora_r=4, lora_alpha=8)
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    T.train(cfg, model=model, tokenizer=tok)
    rs = rows(tmp_path)
    assert [r["skipped"] for r in rs] == [1, 1] and rs[-1]["nonfinite_skips"] == 2
    assert all(math.isnan(r["loss"]) for r in rs)
    assert all(torch.equal(p, before[n]) for n, p in model.named_parameters())
    assert (tmp_path / "checkpoint" / "adapter").is_dir()


def test_checkpoint_refuses_nonfinite_weights(tmp_path):
    model, _ = tiny_policy()
    with torch.no_grad():
        next(p for n, p in model.named_parameters() if "lora_A" in n).fill_(float("inf"))
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad])
    with pytest.raises(RuntimeError, match="non-finite"):
        save_checkpoint(tmp_path, model, opt, {"step": 1})
    assert not (tmp_path / "checkpoint").exists()


@pytest.mark.parametrize("argv, msg", [
    (["--n", "4", "--m", "8"], "--m (8) must not exceed --n (4)"),
    (["--m", "0"], "--m must be >= 1"),
    (["--rule", "median"], "--rule must be one of"),
    (["--method", "ppo"], "--method must be grpo or pods"),
    (["--method", "grpo", "--n", "8", "--m", "4"], "must equal --n"),
    (["--model", "/nonexistent/model-dir"], "model path not found"),
    (["--model", "missing.gguf"], "GGUF file not found"),
    (["--small", "--preset", "paper"], "conflicts"),
    (["--synthetic-level", "5"], "--synthetic-level must be 0, 1 or 2"),
])
def test_bad_arguments_exit_2_with_one_line(argv, msg, capsys):
    assert T.main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert msg in err and err.startswith("minipods.train: error:") and "\n" not in err


def test_cli_exit_code_and_help():
    env = dict(os.environ, PYTHONPATH=os.getcwd())
    p = subprocess.run([sys.executable, "-m", "minipods.train", "--n", "2", "--m", "3"], capture_output=True,
                       text=True, env=env)
    assert p.returncode == 2 and "Traceback" not in p.stderr and p.stderr.count("\n") == 1
    h = T.build_parser().format_help()
    for flag in ["--small", "--preset", "--method", "--n", "--m", "--rule", "--model", "--quantize", "--max-steps",
                 "--prompts-per-step", "--max-new-tokens", "--lr", "--beta", "--seed", "--output-dir", "--eval-every",
                 "--eval-limit", "--resume", "--data"]:
        assert f"{flag} " in h or f"{flag}," in h or f"{flag}\n" in h, flag


def test_presets():
    small = T.make_config("small")
    assert (small.n, small.m, small.method, small.model) == (8, 4, "pods", "smollm2-135m-instruct")
    g = T.make_config("paper", method="grpo")
    p = T.make_config("paper", method="pods")
    assert (g.n, g.m, p.n, p.m) == (16, 16, 64, 16)  # the paper's arms
    assert (p.model, p.quantize, p.lora_r, p.lora_alpha, p.lr, p.max_grad_norm, p.weight_decay) == \
        ("Qwen/Qwen2.5-3B-Instruct", "4bit", 64, 64, 5e-6, 0.1, 0.1)
    assert (p.adam_beta1, p.adam_beta2, p.temperature, p.max_prompt_tokens, p.max_new_tokens) == (0.9, 0.99, 0.9, 512, 512)
    assert T.make_config("small", n=6).n == 6  # explicit flags override presets
    assert T.make_config(None, method="grpo", n=5).m == 5


def test_step_items_is_a_seeded_permutation():
    items = [{"i": i} for i in range(10)]
    first_epoch = [it["i"] for s in range(1, 6) for it in T.step_items(items, s, 2, seed=0)]
    assert sorted(first_epoch) == list(range(10))  # each item once per epoch
    assert T.step_items(items, 3, 2, 0) == T.step_items(items, 3, 2, 0)
    assert [it["i"] for it in T.step_items(items, 1, 10, 1)] != first_epoch


@pytest.mark.slow
def test_two_real_steps_with_the_default_model(tmp_path):
    """End to end: SmolLM2-135M-Instruct (offline GGUF), GSM8K if available, two PODS steps."""
    data = "gsm8k" if os.environ.get("MINIPODS_GSM8K_DIR") else "synthetic"
    cfg = T.make_config("small", data=data, n=4, m=2, prompts_per_step=1, max_new_tokens=24, max_steps=2,
                        output_dir=str(tmp_path), progress=False, temperature=1.0, eval_every=0)
    T.train(cfg)
    rs = rows(tmp_path)
    assert [r["step"] for r in rs] == [1, 2]
    for r in rs:
        assert r["tokens"] > 0 and r["rollout_s"] > 0 and r["update_s"] > 0 and r["skipped"] == 0
        assert 0 < r["update_tokens"] <= r["tokens"]
        assert math.isfinite(r["loss"])
    conf = json.loads((tmp_path / "config.json").read_text())
    assert conf["data_source"].startswith(data) and conf["model"] == "smollm2-135m-instruct"
    assert (tmp_path / "adapter" / "adapter_model.safetensors").is_file()
