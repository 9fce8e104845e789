import json
import math
import os

import numpy as np
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
    assert conf["tf32"] is True and conf["tf32_matmuls"] is False  # asked for, but a CPU has no TF32
    assert (tmp_path / "a" / "adapter" / "adapter_config.json").is_file()
    assert json.loads((tmp_path / "a" / "checkpoint" / "state.json").read_text())["step"] == 3
    with pytest.raises(ValueError, match="already holds a run"):
        T.train(cfg, *tiny_policy())


@pytest.mark.learning_curve
def test_every_evaluation_writes_question_rows(tmp_path):
    from minipods.data import load_task
    from minipods.analysis.results import read_eval
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
        assert [set(r) for r in ev] == [{"index", "gold", "pred", "correct", "strict"}] * 5
        assert all(r["strict"] in (0, 1) and r["strict"] <= r["correct"] for r in ev)
        assert [r["index"] for r in ev] == list(range(5)) and [r["gold"] for r in ev] == golds
        assert all(r["correct"] in (0, 1) and r["correct"] == int(r["pred"] == r["gold"]) for r in ev)
        assert metrics[step]["eval_accuracy"] == pytest.approx(sum(r["correct"] for r in ev) / 5)
    png = (tmp_path / "learning_curve.png").read_bytes()
    assert png.startswith(b"\x89PNG") and len(png) > 10_000


def test_the_run_ends_with_the_paired_line_of_its_first_and_last_evaluation(tmp_path, capsys, monkeypatch):
    """Evaluation scores set by hand (the tiny model never answers right): step 0 gets 2 of 8 right,
    the last evaluation 5 of 8, with 1 question lost and 4 gained. The printed line is checked
    against those counts: swapped evaluations, or the wrong pair, would print other numbers."""
    from minipods import evaluate
    from minipods.stats import newcombe_paired

    by_call = iter([[1, 0, 0, 0, 1, 0, 0, 0], [1, 1, 1, 0, 0, 1, 1, 0]])

    def scores(texts, golds):
        c = [float(x) for x in next(by_call)]
        return {"reward": c, "correct": c, "format": [0.0] * len(c)}

    monkeypatch.setattr(evaluate, "score_completions", scores)
    run(tiny_cfg(tmp_path, max_steps=2, eval_every=2, eval_limit=8, eval_max_new_tokens=4))
    lo, hi = newcombe_paired(1, 4, 1, 2)  # both right 1, only last 4, only first 1, neither 2
    assert (round(100 * lo, 1), round(100 * hi, 1)) == (-12.5, 69.3)
    assert capsys.readouterr().out.strip().splitlines()[-1] == \
        "eval accuracy 25.0% -> 62.5% (+37.5 points, paired 95% CI [-12.5, +69.3], 8 questions)"


def test_synthetic_notice_is_printed_once_per_run(tmp_path, capsys, recwarn):
    run(tiny_cfg(tmp_path, max_steps=1, eval_every=1, eval_limit=2, eval_max_new_tokens=4))
    err = capsys.readouterr().err
    assert err.count("SYNTHETIC") == 1 and "--data synthetic" in err  # train and test split: one notice
    assert "MINIPODS_GSM8K_DIR" not in err  # the task was chosen, not a fallback: nothing to set
    assert not [w for w in recwarn if "SYNTHETIC" in str(w.message)]


def _length_rewards(texts, golds):  # a deterministic reward with spread, for a random tiny model
    r = [(len(t) % 5) / 4 for t in texts]
    return {"reward": r, "correct": [0.0] * len(r), "format": [0.0] * len(r)}


def test_select_kept_by_hand():
    # 2 prompts x n = 5, group-major; m = 2
    r = torch.tensor([0.0, 1.0, 0.5, 1.0, 0.0,   0.2, 0.2, 0.9, 0.1, 0.2])
    assert T.select_kept(r, 5, 2, "max_variance", seed=0, step=1) == [0, 3, 7, 8]  # a lowest and a highest
    assert T.select_kept(r, 5, 2, "max_reward", seed=0, step=1) == [1, 3, 5, 7]  # ties: the earlier index
    assert T.select_kept(r, 5, 5, "random", seed=0, step=1) == list(range(10))  # m = n keeps all
    rand = T.select_kept(r, 5, 2, "random", seed=0, step=1)
    gen = np.random.default_rng([0, 1, 7])  # one generator per (seed, step), used group after group
    assert rand == [g * 5 + i for g in (0, 1) for i in sorted(gen.choice(5, size=2, replace=False).tolist())]
    assert rand == T.select_kept(r, 5, 2, "random", seed=0, step=1)  # reproducible: resume needs it
    draws = {tuple(T.select_kept(r, 5, 2, "random", seed=0, step=s)) for s in range(1, 9)}
    assert len(draws) > 1  # another step, another draw
    assert all(sorted(d) == list(d) and sum(i < 5 for i in d) == 2 for d in draws)


@pytest.mark.parametrize("rule", ["max_variance", "max_reward", "random"])
def test_each_rule_keeps_what_the_rule_says_in_a_run(tmp_path, monkeypatch, rule):
    """kept_idx of every step, per prompt, is exactly minipods.downsample's choice for that step's
    rewards (random: the seeded generator of select_kept, replayed here)."""
    from minipods.downsample import downsample

    seen = []

    def recorded(texts, golds):
        out = _length_rewards(texts, golds)
        seen.append(out["reward"])
        return out

    monkeypatch.setattr(T, "score_completions", recorded)
    cfg = tiny_cfg(tmp_path, n=6, m=3, max_steps=3, prompts_per_step=2, rule=rule)
    run(cfg)
    rs = rows(tmp_path)
    assert len(seen) == len(rs) == 3
    for step, (r, rewards) in enumerate(zip(rs, seen), start=1):
        gen = np.random.default_rng([cfg.seed, step, 7])
        want = [downsample(rewards[g * 6:(g + 1) * 6], 3, rule, gen) for g in range(2)]
        assert r["kept_idx"] == want, (rule, step)
        kept = [rewards[g * 6 + i] for g in range(2) for i in want[g]]
        assert r["kept_reward_mean"] == pytest.approx(sum(kept) / 6)
        assert r["reward_mean"] == pytest.approx(sum(rewards) / 12)
    assert any(len(set(rw)) > 1 for rw in seen)  # the rewards have spread: the rules disagree


def test_adv_norm_kept_and_all(tmp_path, monkeypatch):
    """The advantages handed to the update: standardised within the kept m (kept, the paper's) or
    over all n with the kept rows' values taken (all); written out here with numpy."""
    got, seen = {}, []
    real = {"grpo_update": T.grpo_update, "fast_grpo_update": T.fast_grpo_update}  # --no-fast / --fast

    def spy_of(name):
        def spy(model, optimizer, batch, advantages, **kw):
            got.setdefault(cfg.adv_norm, []).append(advantages.clone())
            return real[name](model, optimizer, batch, advantages, **kw)
        return spy

    def recorded(texts, golds):
        seen.append(_length_rewards(texts, golds)["reward"])
        return _length_rewards(texts, golds)

    for name in real:
        monkeypatch.setattr(T, name, spy_of(name))
    monkeypatch.setattr(T, "score_completions", recorded)
    for norm in ("kept", "all"):
        cfg = tiny_cfg(tmp_path / norm, n=6, m=3, max_steps=2, prompts_per_step=2, adv_norm=norm)
        seen.clear()
        run(cfg)
        for step, row in enumerate(rows(tmp_path / norm), start=1):
            r = np.array(seen[step - 1]).reshape(2, 6)
            want = []
            for g in range(2):
                pool = r[g][row["kept_idx"][g]] if norm == "kept" else r[g]
                sd = pool.std(ddof=1)
                a = (r[g] - pool.mean()) / (sd + 1e-4) if pool.max() > pool.min() else np.zeros(6)
                want += a[row["kept_idx"][g]].tolist()
            assert got[norm][step - 1].tolist() == pytest.approx(want, abs=1e-5), (norm, step)
    assert not all(torch.allclose(a, b) for a, b in zip(got["kept"], got["all"]))  # the choice matters


def test_a_budgeted_run_shows_no_step_total():
    """With a training-time budget the run ends on time, not at max_steps: no false step ETA."""
    budgeted = T._progress_bar(T.make_config("laptop"), 0)
    stepped = T._progress_bar(T.make_config("small"), 0)
    assert budgeted.total is None and "900 s budget" in budgeted.desc
    assert stepped.total == 32 and "budget" not in stepped.desc
    budgeted.close(), stepped.close()


def test_the_first_step_says_how_long_the_run_will_take(tmp_path, monkeypatch, capsys):
    """One line on stderr after the first step: its time and the whole run's (steps, or as many as the budget
    allows, and the evaluations at the time the first one took); nothing with --no-progress."""
    real_step, real_eval = T.run_step, T._evaluate
    monkeypatch.setattr(T, "run_step", lambda *a: {**real_step(*a), "step_s": 10.0})
    monkeypatch.setattr(T, "_evaluate", lambda *a: {**real_eval(*a), "eval_s": 4.0})
    common = dict(eval_every=3, eval_limit=2, eval_max_new_tokens=2, max_new_tokens=4, save_every=10)
    run(tiny_cfg(tmp_path / "a", max_steps=6, budget_s=25.0, progress=True, **common))  # 3 steps: 30 s >= 25 s
    err = [ln for ln in capsys.readouterr().err.splitlines() if "took" in ln]
    assert err == ["minipods.train: step 1 took 10.0 s; about 38 s for the whole run (3 steps within the 25 s "
                   "budget + 2 evaluations of ~4 s)"]
    assert T.run_estimate(T.make_config("small", eval_every=8), [{"step": 0, "eval_s": 60.0}, {"step": 1, "step_s": 30.0}]) \
        == "minipods.train: step 1 took 30.0 s; about 21 min for the whole run (32 steps + 5 evaluations of ~60 s)"
    run(tiny_cfg(tmp_path / "b", max_steps=1, **common))
    assert "took" not in capsys.readouterr().err


def test_budget_s_stops_the_run_and_evaluates_its_last_step(tmp_path, monkeypatch):
    real_step = T.run_step

    def one_second(*a):  # every step "takes" 1 s of training time
        return {**real_step(*a), "step_s": 1.0}

    monkeypatch.setattr(T, "run_step", one_second)
    run(tiny_cfg(tmp_path, max_steps=10, budget_s=2.5, save_every=10, eval_every=5, eval_limit=2,
                 eval_max_new_tokens=4))
    rs = rows(tmp_path)
    assert [r["step"] for r in rs] == [0, 1, 2, 3]  # 3 s >= 2.5 s after step 3: no step 4
    assert [r["elapsed_s"] for r in rs[1:]] == [1.0, 2.0, 3.0]
    assert [r["step"] for r in rs if "eval_accuracy" in r] == [0, 3]  # the last step is evaluated
    assert json.loads((tmp_path / "checkpoint" / "state.json").read_text())["step"] == 3  # and saved


def test_same_seed_same_run_and_resume_after_interrupt(tmp_path, monkeypatch):
    run(tiny_cfg(tmp_path / "full", max_steps=4))
    full = rows(tmp_path / "full")
    # reproducible: kept indices and metrics identical for a second run with the same seed
    run(tiny_cfg(tmp_path / "again", max_steps=2))
    assert strip(rows(tmp_path / "again")) == strip(full[:2])

    # interrupt during step 3 (Ctrl-C): the checkpoint holds step 2, no row of step 3 exists
    real_step = T.run_step

    def interrupted(model, tok, engine, cfg, items, step):
        if step == 3:
            raise KeyboardInterrupt
        return real_step(model, tok, engine, cfg, items, step)

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


def test_help_lists_the_run_settings():
    h = T.build_parser().format_help()
    for flag in ["--small", "--preset", "--method", "--n", "--m", "--rule", "--model", "--quantize", "--max-steps",
                 "--prompts-per-step", "--max-new-tokens", "--lr", "--beta", "--seed", "--output-dir", "--eval-every",
                 "--eval-limit", "--resume", "--data"]:
        assert f"{flag} " in h or f"{flag}," in h or f"{flag}\n" in h, flag


def test_presets_give_their_values_flags_override_and_grpo_updates_on_all():
    for name, values in T.PRESETS.items():
        c = T.make_config(name)
        assert {k: getattr(c, k) for k in values} == values, name
        g = T.make_config(name, method="grpo")  # vanilla GRPO: n = m = the preset's m (the paper: 16 against 64 -> 16)
        assert g.n == g.m == values.get("m", T.TrainConfig.m) and g.method == "grpo", name
    assert T.make_config("small", n=6).n == 6  # explicit flags override presets
    assert T.make_config(None, method="grpo", n=5).m == 5
    assert T.make_config("paper", method="grpo", m=8).n == 8


def test_step_items_is_a_seeded_permutation():
    items = [{"i": i} for i in range(10)]
    first_epoch = [it["i"] for s in range(1, 6) for it in T.step_items(items, s, 2, seed=0)]
    assert sorted(first_epoch) == list(range(10))  # each item once per epoch
    assert T.step_items(items, 3, 2, 0) == T.step_items(items, 3, 2, 0)
    assert [it["i"] for it in T.step_items(items, 1, 10, 1)] != first_epoch


def test_two_steps_on_gsm8k_if_available(tmp_path):
    """End to end on GSM8K's local files if set (else synthetic), two PODS steps. On the tiny model:
    SmolLM2 trains once in the suite, in test_faults' real-model kill-and-resume test."""
    data = "gsm8k" if os.environ.get("MINIPODS_GSM8K_DIR") else "synthetic"
    cfg = tiny_cfg(tmp_path, data=data, n=4, m=2, prompts_per_step=1, max_new_tokens=24, max_steps=2,
                   temperature=1.0)
    run(cfg)
    rs = rows(tmp_path)
    assert [r["step"] for r in rs] == [1, 2]
    for r in rs:
        assert r["tokens"] > 0 and r["rollout_s"] > 0 and r["update_s"] > 0 and r["skipped"] == 0
        assert 0 < r["update_tokens"] <= r["tokens"]
        assert math.isfinite(r["loss"])
    conf = json.loads((tmp_path / "config.json").read_text())
    assert conf["data_source"].startswith(data)
    assert (tmp_path / "adapter" / "adapter_model.safetensors").is_file()
