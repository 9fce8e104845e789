"""minipods.analysis.compare / .plots: arms, resume, figures and the summary (tiny model, synthetic data).
The summary numbers on hand-made metrics: tests/test_results.py."""

import csv
import itertools
import json
import math
import os
import random
import shutil

import pytest

from minipods import evaluate
from minipods import train as train_mod
from minipods.analysis import compare, plots, results
from minipods.stats import mcnemar_p, paired_difference
from minipods.twins.tiny import tiny_policy

TINY = dict(data="synthetic", n=4, m=2, prompts_per_step=2, max_new_tokens=6, max_prompt_tokens=48, max_steps=3,
            eval_every=2, eval_limit=4, eval_max_new_tokens=6, eval_batch_size=8, save_every=1, device="cpu",
            progress=False)
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


class Factory:
    """model_factory for run_comparison: a fresh tiny model per arm, remembering the calls."""

    def __init__(self):
        self.calls, self.models = [], []

    def __call__(self, cfg):
        self.calls.append(os.path.basename(cfg.output_dir))
        model, tok = tiny_policy(seed=0)
        self.models.append(model)
        return model, tok


_CALLS = itertools.count()


def varied_scores(texts, golds):
    """Evaluation scores with spread for a random tiny model (which never answers right and whose
    greedy completions are all alike): a seeded pattern per evaluation call. What is tested is that
    the summaries agree with the per-question files, whatever they hold."""
    rng = random.Random(next(_CALLS))
    c = [float(rng.random() < 0.5) for _ in texts]
    return {"reward": c, "correct": c, "format": [0.0] * len(c)}


def _csv(path):
    with open(path) as f:
        return list(csv.DictReader(f))


def _num(s):
    return None if s == "" else float(s)


@pytest.fixture(scope="module")
def cmp_dir(tmp_path_factory):
    """A two-arm comparison whose PODS arm is interrupted at step 2, then resumed by a re-run."""
    out = tmp_path_factory.mktemp("cmp")
    first, second = Factory(), Factory()
    real_step = train_mod.run_step
    state = {"raised": False}

    def flaky_step(model, tok, optimizer, cfg, items, step):
        if cfg.method == "pods" and step == 2 and not state["raised"]:
            state["raised"] = True
            raise KeyboardInterrupt  # like Ctrl-C in the middle of the PODS arm
        return real_step(model, tok, optimizer, cfg, items, step)

    varied = pytest.MonkeyPatch()
    varied.setattr(evaluate, "score_completions", varied_scores)  # accuracies that differ between arms
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(train_mod, "run_step", flaky_step)
        with pytest.raises(KeyboardInterrupt):
            compare.run_comparison(out, model_factory=first, log=lambda *a: None, **TINY)
    assert first.calls == ["grpo", "pods_max_variance"]
    assert (out / "grpo" / compare.DONE).is_file()
    assert not (out / "pods_max_variance" / compare.DONE).exists()
    assert json.loads((out / "pods_max_variance" / "checkpoint" / "state.json").read_text())["step"] == 1
    grpo_metrics = (out / "grpo" / "metrics.jsonl").read_bytes()

    compare.run_comparison(out, model_factory=second, log=lambda *a: None, **TINY)
    varied.undo()
    assert second.calls == ["pods_max_variance"], "the finished arm must not run again"
    assert (out / "grpo" / "metrics.jsonl").read_bytes() == grpo_metrics
    return out


def test_arms_get_their_own_settings_and_models(cmp_dir, tmp_path):
    g = results.read_config(cmp_dir / "grpo")
    p = results.read_config(cmp_dir / "pods_max_variance")
    assert (g["method"], g["n"], g["m"]) == ("grpo", 2, 2)  # GRPO: n = m = the shared m
    assert (p["method"], p["rule"], p["n"], p["m"]) == ("pods", "max_variance", 4, 2)
    for k in ("seed", "prompts_per_step", "max_steps", "lr", "data", "eval_limit"):
        assert g[k] == p[k], k  # same seed (hence data order), budget and evaluation
    meta = json.loads((cmp_dir / "comparison.json").read_text())
    assert meta["arms"] == ["grpo", "pods_max_variance"] and meta["baseline"] == "grpo"
    f = Factory()
    compare.run_comparison(tmp_path, model_factory=f, log=lambda *a: None, **{**TINY, "max_steps": 1,
                                                                                       "eval_every": 0})
    assert f.calls == ["grpo", "pods_max_variance"] and f.models[0] is not f.models[1]


def test_resumed_arm_has_every_step_once(cmp_dir):
    for arm in ("grpo", "pods_max_variance"):
        rows = results.read_rows(cmp_dir / arm)
        assert [r["step"] for r in rows] == [0, 1, 2, 3]
        assert [r["step"] for r in rows if "eval_accuracy" in r] == [0, 2, 3]  # eval_every=2 and the last step
        el = [r["elapsed_s"] for r in rows]
        assert el == sorted(el) and el[-1] > 0
        assert json.loads((cmp_dir / arm / compare.DONE).read_text())["step"] == 3
        assert (cmp_dir / arm / "adapter" / "adapter_config.json").is_file()


def test_figures_and_summary_match_the_metrics(cmp_dir):
    for name in plots.FIGURES:
        data = (cmp_dir / name).read_bytes()
        assert data.startswith(PNG_MAGIC) and len(data) > 5000, name
    runs = {a: results.read_rows(cmp_dir / a) for a in ("grpo", "pods_max_variance")}
    want = results.summarize(runs)
    got = _csv(cmp_dir / "summary.csv")
    assert [r["arm"] for r in got] == ["grpo", "pods_max_variance"]
    for w, g in zip(want, got):
        tr = [r for r in runs[w["arm"]] if "step_s" in r]
        assert w["mean_step_s"] == pytest.approx(sum(r["step_s"] for r in tr) / 3)
        assert w["peak_accuracy"] == max(r["eval_accuracy"] for r in runs[w["arm"]] if "eval_accuracy" in r)
        for k in ("mean_step_s", "mean_rollout_s", "mean_update_s", "zero_std_frac", "train_s", "peak_mem_mb"):
            assert _num(g[k]) == (pytest.approx(w[k]) if w[k] is not None else None), k
        assert _num(g["final_mean"]) == pytest.approx(w["final_accuracy"]) and float(g["steps"]) == 3
    assert got[0]["rule"] == "" and got[1]["rule"] == "max_variance"
    md = (cmp_dir / "summary.md").read_text()
    assert "| grpo | 2 | 2 | " in md and "| pods_max_variance | 4 | 2 | " in md


def test_rerun_does_not_retrain_finished_arms(cmp_dir):
    stamps = {a: (cmp_dir / a / "metrics.jsonl").stat().st_mtime_ns for a in ("grpo", "pods_max_variance")}
    f, logs = Factory(), []
    compare.run_comparison(cmp_dir, model_factory=f, log=logs.append, **TINY)
    assert f.calls == []
    assert sum("skipped" in line for line in logs) == 2
    assert {a: (cmp_dir / a / "metrics.jsonl").stat().st_mtime_ns for a in stamps} == stamps


def test_rerun_with_other_settings_is_refused(cmp_dir):
    with pytest.raises(ValueError, match="different settings.*lr"):
        compare.run_comparison(cmp_dir, model_factory=Factory(), log=lambda *a: None, **{**TINY, "lr": 1e-3})


def test_plots_cli_redraws_from_saved_runs(cmp_dir, tmp_path, capsys):
    before = (cmp_dir / "summary.csv").read_text()
    for name in plots.FIGURES + ("summary.csv", "summary.md"):
        (cmp_dir / name).unlink()
    assert plots.main([str(cmp_dir)]) == 0
    for name in plots.FIGURES:
        assert (cmp_dir / name).read_bytes().startswith(PNG_MAGIC)
    assert (cmp_dir / "summary.csv").read_text() == before
    # individual run folders, written elsewhere; the grpo run is found as the baseline
    assert plots.main([str(cmp_dir / "pods_max_variance"), str(cmp_dir / "grpo"), "--out", str(tmp_path)]) == 0
    assert {r["arm"] for r in _csv(tmp_path / "summary.csv")} == {"grpo", "pods_max_variance"}
    assert all((tmp_path / n).is_file() for n in plots.FIGURES)
    assert plots.main([str(tmp_path / "nothing")]) == 2
    assert capsys.readouterr().err.count("\n") == 1


# ---------------------------------------------------------------- arm configs and the CLI
def test_arm_configs_presets_and_overrides():
    for preset in ("small", "paper"):
        c, p = compare.arm_configs(preset=preset), train_mod.PRESETS[preset]
        assert (c["grpo"].n, c["grpo"].m) == (p["m"], p["m"])  # GRPO updates on all it generates: m of PODS's n
        assert (c["pods_max_variance"].n, c["pods_max_variance"].m) == (p["n"], p["m"]) and p["m"] < p["n"]
    c = compare.arm_configs(preset="small")
    assert c["grpo"].eval_every == compare.SMALL_EVAL_EVERY and c["grpo"].max_steps == train_mod.PRESETS["small"]["max_steps"]
    c = compare.arm_configs(["grpo", "pods_random", "pods_max_reward"], preset="small", n=16, m=8, budget_s=60)
    assert (c["grpo"].n, c["pods_random"].n, c["pods_random"].m) == (8, 16, 8)
    assert c["pods_random"].rule == "random" and c["pods_max_reward"].rule == "max_reward"
    assert c["grpo"].budget_s == 60 and c["grpo"].max_steps == compare.UNBOUNDED_STEPS  # the budget binds
    assert {v.seed for v in c.values()} == {0}


def test_summary_names_the_pricing_and_re_prices_from_the_rows(cmp_dir):
    md = (cmp_dir / "summary.md").read_text()
    assert "Update pricing (config.json): `grpo` skip_silent, `pods_max_variance` skip_silent." in md
    assert "re-priced to every_row (estimate from per-row costs)" in md
    for arm in ("grpo", "pods_max_variance"):
        rows = [r for r in results.read_rows(cmp_dir / arm) if "step_s" in r]
        got = results.repriced_seconds(rows, "skip_silent", "every_row")
        # the tiny model's rewards all agree: every step ran 1 placeholder row of its 2 prompts x m = 2 kept, so
        # each is priced at the run's mean seconds per row x 4, and the run at 4 x its update seconds
        assert [(r["kept_rows"], r["silent_rows"]) for r in rows] == [(4, 4)] * 3
        update = sum(r["update_s"] for r in rows)
        assert got[3] == pytest.approx(rows[-1]["elapsed_s"] + 3 * update) and got[1] > rows[0]["elapsed_s"]


# ---------------------------------------------------------------- paired differences, several seeds
def _correct(run_dir):
    return {r["index"]: r["correct"] for r in results.final_eval(run_dir)}


def test_single_seed_summary_has_the_paired_difference(cmp_dir):
    a, b = _correct(cmp_dir / "grpo"), _correct(cmp_dir / "pods_max_variance")
    assert sorted(a) == sorted(b) == [0, 1, 2, 3]  # the same 4 questions
    b_only = sum(b[i] and not a[i] for i in a)
    a_only = sum(a[i] and not b[i] for i in a)
    got = {r["arm"]: r for r in _csv(cmp_dir / "summary.csv")}
    assert a_only + b_only > 0  # (the varied scores make the arms disagree somewhere)
    assert float(got["grpo"]["vs_focus_mean"]) == pytest.approx((b_only - a_only) / 4)
    assert float(got["grpo"]["vs_focus_questions_diff"]) == pytest.approx((b_only - a_only) / 4)
    assert int(got["grpo"]["vs_focus_questions_n"]) == 4 and got["pods_max_variance"]["vs_focus_mean"] == ""
    assert got["grpo"]["vs_focus_lo"] == ""  # one run: no seed-level interval
    want = paired_difference([a[i] for i in sorted(a)], [b[i] for i in sorted(a)])
    assert (float(got["grpo"]["vs_focus_questions_lo"]), float(got["grpo"]["vs_focus_questions_hi"])) == \
        pytest.approx(want["ci95"])
    md = (cmp_dir / "summary.md").read_text()
    assert f"McNemar p {mcnemar_p(a_only, b_only):.2g}; one run: no seed-level interval" in md


def test_grpo_same_n_and_small_default_arms():
    c = compare.arm_configs(preset="small")
    assert list(c) == list(compare.SMALL_ARMS) == ["grpo", "grpo_same_n", "pods_max_variance", "pods_random"]
    assert (c["grpo_same_n"].method, c["grpo_same_n"].n, c["grpo_same_n"].m) == ("grpo", 8, 8)  # PODS's n
    assert (c["grpo"].n, c["pods_max_variance"].n, c["pods_max_variance"].m) == (4, 8, 4)
    c = compare.arm_configs(["grpo_same_n"], n=6, m=2)
    assert (c["grpo_same_n"].n, c["grpo_same_n"].m) == (6, 6)
    assert list(compare.arm_configs()) == list(compare.DEFAULT_ARMS)


SEED_ARMS = ["grpo", "grpo_same_n", "pods_max_variance"]


@pytest.fixture(scope="module")
def seeds_study(tmp_path_factory):
    """`compare --seeds 0,1` over three arms (tiny model); the merge tests copy its folders."""
    out, f = tmp_path_factory.mktemp("seeds"), Factory()
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(evaluate, "score_completions", varied_scores)
        compare.run_comparison(out, arms=SEED_ARMS, seeds="0,1", model_factory=f, log=lambda *a: None, **TINY)
    assert f.calls == SEED_ARMS * 2
    for ev in out.glob("seed*/*/eval/*.jsonl"):  # the answers varied_scores marks right, as the grader would
        ev.write_text("".join(json.dumps({**q, "pred": q["gold"] if q["correct"] else q["pred"]}) + "\n"
                              for q in map(json.loads, ev.read_text().splitlines())))
    return out


def test_seeds_run_each_arm_once_per_seed_and_summarize_across_them(seeds_study):
    out, arms = seeds_study, SEED_ARMS
    for s in (0, 1):
        golds = set()
        for a in arms:
            cfg = results.read_config(out / f"seed{s}" / a)
            assert cfg["seed"] == s and (out / f"seed{s}" / a / compare.DONE).is_file()
            golds.add(tuple(r["gold"] for r in results.final_eval(out / f"seed{s}" / a)))
        assert len(golds) == 1  # the arms of one seed are evaluated on the same questions
    assert results.read_config(out / "seed1" / "grpo_same_n")["n"] == 4 == results.read_config(out / "seed1" / "grpo_same_n")["m"]
    got = {r["arm"]: r for r in _csv(out / "summary.csv")}
    assert list(got) == arms
    for a in arms:
        finals = [results.summarize({a: results.read_rows(out / f"seed{s}" / a)})[0]["final_accuracy"] for s in (0, 1)]
        mean = sum(finals) / 2
        half = 12.706 * abs(finals[0] - finals[1]) / 2  # t(1) * sd / sqrt(2), sd = |x0 - x1| / sqrt(2)
        assert float(got[a]["final_mean"]) == pytest.approx(mean)
        assert float(got[a]["final_lo"]) == pytest.approx(max(0.0, mean - half))  # clipped to [0, 1]
        assert float(got[a]["final_hi"]) == pytest.approx(min(1.0, mean + half))
        assert int(got[a]["seeds"]) == 2
    # seed level: the mean of the two seeds' differences; pooled: these seeds' (seed, question) pairs
    pa = [c for s in (0, 1) for _, c in sorted(_correct(out / f"seed{s}" / "grpo").items())]
    pb = [c for s in (0, 1) for _, c in sorted(_correct(out / f"seed{s}" / "pods_max_variance").items())]
    want = paired_difference(pa, pb)
    assert len({float(got[a]["final_mean"]) for a in arms}) > 1  # the scores do differ
    assert want["a_only"] + want["b_only"] > 0
    assert int(got["grpo"]["vs_focus_questions_n"]) == 8
    assert float(got["grpo"]["vs_focus_questions_diff"]) == pytest.approx(want["diff"])
    assert float(got["grpo"]["vs_focus_questions_lo"]) == pytest.approx(want["ci95"][0])
    per = [(sum(pb[4 * s:4 * s + 4]) - sum(pa[4 * s:4 * s + 4])) / 4 for s in (0, 1)]
    assert float(got["grpo"]["vs_focus_mean"]) == pytest.approx(sum(per) / 2) and int(got["grpo"]["vs_focus_k"]) == 2
    md = (out / "summary.md").read_text()
    assert "2 seeds (0, 1)" in md and "| grpo_same_n | 4 | 4 |" in md
    assert (out / "accuracy_vs_time.png").read_bytes().startswith(PNG_MAGIC)
    # each seed is a whole comparison too, labelled with its own seed
    assert (out / "seed1" / "summary.md").read_text().startswith("# minipods comparison: 1 seed (1)\n")
    # a re-run trains nothing; the plots CLI redraws the same summary from the saved runs
    before = (out / "summary.csv").read_text()
    f2 = Factory()
    compare.run_comparison(out, arms=arms, seeds=[0, 1], model_factory=f2, log=lambda *a: None, **TINY)
    assert f2.calls == []
    (out / "summary.csv").unlink()
    assert plots.main([str(out)]) == 0 and (out / "summary.csv").read_text() == before


# ---------------------------------------------------------------- the class study: machines, fingerprint, merge
def test_each_arm_records_its_machine_and_each_seed_its_design(seeds_study, monkeypatch):
    from minipods.measure import speed
    for s in (0, 1):
        done = [results.read_done(seeds_study / f"seed{s}" / a) for a in SEED_ARMS]
        assert {(d["cpu"], d["threads"], d["host"]) for d in done} == {(compare.cpu_name(), done[0]["threads"], done[0]["host"])}
        assert all("probe" not in d for d in done)  # no time budget: no probe
        cfgs = {a: results.read_config(seeds_study / f"seed{s}" / a) for a in SEED_ARMS}
        meta = json.loads((seeds_study / f"seed{s}" / "comparison.json").read_text())
        assert meta["fingerprint"] == results.fingerprint(cfgs)
    # the fingerprint ignores the seed and the paths, not a setting
    cfgs = {a: results.read_config(seeds_study / "seed0" / a) for a in SEED_ARMS}
    moved = {a: {**c, "seed": 7, "output_dir": "/elsewhere", "data_dir": "/x"} for a, c in cfgs.items()}
    assert results.fingerprint(moved) == results.fingerprint(cfgs) != results.fingerprint({**cfgs, "grpo": {**cfgs["grpo"], "lr": 1}})
    monkeypatch.setattr(speed, "machine_limits", lambda: {"fp32_tflops": 0.15, "mem_gbs": 40.0, "bf16_tflops": 0.1, "threads": 2})
    rec = compare.machine_record(compare.arm_configs(preset="class")["grpo"])
    assert rec["probe"] == {"fp32_tflops": 0.15, "mem_gbs": 40.0} and rec["cpu"] == compare.cpu_name()


def test_class_preset_arms_sizing_and_primary():
    c = compare.arm_configs(preset="class")
    assert list(c) == ["grpo", "pods_max_variance"]
    assert [(x.n, x.m, x.prompts_per_step, x.loss_type, x.skip_silent) for x in c.values()] == [
        (4, 4, 1, "grpo", False), (16, 4, 1, "grpo", False)]  # the laptop study's step
    g = c["grpo"]
    assert 1 + math.ceil(g.budget_s / g.eval_every_s) >= 5 and g.eval_every == 0 and g.max_steps == compare.UNBOUNDED_STEPS
    assert list(compare.arm_configs("grpo,pods_max_variance,pods_random", preset="class")) == list(compare.LAPTOP_ARMS)
    assert compare._meta(c, "class", {})["primary"] == "time_averaged" and "primary" not in compare._meta(c, "laptop", {})


def _merge(argv, capsys):
    rc = compare.main(["--merge", *map(str, argv[:-1]), "--output-dir", str(argv[-1])])
    return rc, capsys.readouterr()


def test_merge_equals_compare_over_the_same_seeds(seeds_study, tmp_path, capsys):
    rc, (_, err) = _merge([seeds_study / "seed0", seeds_study / "seed1", tmp_path / "m"], capsys)
    assert rc == 0, err
    for name in ("summary.md", "summary.csv"):
        assert (tmp_path / "m" / name).read_text() == (seeds_study / name).read_text(), name
    assert (tmp_path / "m" / "accuracy_vs_time.png").read_bytes().startswith(PNG_MAGIC)
    meta = json.loads((tmp_path / "m" / "comparison.json").read_text())
    assert meta["seeds"] == [0, 1] and meta["arms"] == SEED_ARMS and len(meta["fingerprint"]) == 12
    assert not (tmp_path / "m" / "seed1").exists()  # the runs are read from the seed folders merged
    assert results.seed_dirs(tmp_path / "m", meta)[1]["grpo"].resolve() == (seeds_study / "seed1" / "grpo").resolve()
    md = (tmp_path / "m" / "summary.md").read_text()
    assert f"Machines (a seed's arms ran on one): {compare.cpu_name()}, " in md and " threads: seeds 0, 1." in md
    # a merged study merges again with a seed folder: the same study
    assert _merge([seeds_study / "seed1", tmp_path / "one"], capsys)[0] == 0
    assert _merge([tmp_path / "one", seeds_study / "seed0", tmp_path / "again"], capsys)[0] == 0
    assert (tmp_path / "again" / "summary.md").read_text() == (seeds_study / "summary.md").read_text()


def _edit(path, fn):
    path.write_text(fn(path.read_text()))


def _json_edit(path, **kw):
    _edit(path, lambda t: json.dumps({**json.loads(t), **kw}))


REFUSALS = {  # what is done to a copy of seed 1 -> the one-line refusal
    "design": (lambda d: [_json_edit(d / a / "config.json", lr=1e-3) for a in SEED_ARMS], "another design"),
    "missing arm": (lambda d: shutil.rmtree(d / "grpo_same_n"), "lacks arm grpo_same_n"),
    "arm left out": (lambda d: (shutil.rmtree(d / "grpo_same_n"), _json_edit(d / "comparison.json", arms=["grpo", "pods_max_variance"])),
                     "differ in arm grpo_same_n"),
    "unfinished": (lambda d: (d / "grpo" / "DONE").unlink(), "has not finished"),
    "metrics torn inside": (lambda d: _edit(d / "grpo" / "metrics.jsonl", lambda t: '{"step": 1, bad\n' + t), "not valid JSON"),
    "metrics cut short": (lambda d: _edit(d / "grpo" / "metrics.jsonl", lambda t: "\n".join(t.splitlines()[:2]) + "\n"),
                          "DONE differs from metrics.jsonl"),
    "eval damaged": (lambda d: _edit(d / "pods_max_variance" / "eval" / "step_00003.jsonl", lambda t: "{oops\n" + t), "not valid JSON"),
    "eval short": (lambda d: _edit(d / "pods_max_variance" / "eval" / "step_00003.jsonl", lambda t: t.splitlines()[0] + "\n"),
                   "step 3's evaluation in metrics.jsonl differs from eval/step_00003.jsonl"),
    "two machines": (lambda d: _json_edit(d / "grpo" / "DONE", cpu="Another CPU"), "different machines"),
    "done damaged": (lambda d: (d / "grpo" / "DONE").write_text("{"), "not valid JSON"),
}


@pytest.mark.parametrize("case", list(REFUSALS) + ["same seed twice", "not a study", "output not empty", "with settings"])
def test_merge_refuses_with_one_line_and_writes_nothing(case, seeds_study, tmp_path, capsys):
    bad = tmp_path / "hand-in"
    shutil.copytree(seeds_study / "seed1", bad)
    dirs, out, want = [seeds_study / "seed0", bad], tmp_path / "out", None
    if case in REFUSALS:
        REFUSALS[case][0](bad)
        want = REFUSALS[case][1]
    elif case == "same seed twice":
        dirs, want = [seeds_study, bad], "seed 1 twice"
    elif case == "not a study":
        dirs, want = [seeds_study / "seed0", tmp_path], "neither a seed folder"
    elif case == "output not empty":
        out.mkdir()
        (out / "notes.txt").write_text("mine")
        want = "not an empty folder"
    if case == "with settings":
        rc = compare.main(["--merge", str(bad), "--lr", "1e-3", "--output-dir", str(out)])
        err, want = capsys.readouterr().err, "--merge and --audit take only"
    else:
        rc, (_, err) = _merge([*dirs, out], capsys)
    assert rc == 2 and err.count("\n") == 1 and want in err, err
    assert (not out.exists() or [p.name for p in out.iterdir()] == ["notes.txt"])
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # no half-written study left aside


def test_summary_shows_each_seeds_probe_beside_its_difference(seeds_study, tmp_path):
    study = tmp_path / "probed"
    shutil.copytree(seeds_study, study)
    for s, gf in ((0, 0.15), (1, 0.05)):
        for a in SEED_ARMS:
            _json_edit(study / f"seed{s}" / a / "DONE", probe={"fp32_tflops": gf, "mem_gbs": 30.0})
    meta = {**json.loads((study / "comparison.json").read_text()), "primary": "time_averaged"}
    plots.make(results.seed_dirs(study, meta), study, meta)
    md = (study / "summary.md").read_text()
    d = {r["arm"]: r for r in _csv(study / "summary.csv")}["grpo"]
    assert "time-averaged accuracy (primary)" in md and "the primary statistic of this study" in md
    firsts = [line for line in md.splitlines() if line.startswith("- `pods_max_variance` minus") and "same training time" not in line]
    assert "time-averaged accuracy (primary)" in firsts[0] and "final evaluations" in firsts[-1]  # the primary first
    assert "Per seed, its machine probe (fp32 matmul GFLOP/s, the arms' mean) → `pods_max_variance` minus `grpo`, " \
           "time-averaged: 0: 150 → " in md and ", 1: 50 → " in md
    assert d["averaged_vs_focus_k"] == "2"


def test_audit_reruns_the_first_steps_and_catches_an_edited_hand_in(seeds_study, tmp_path, monkeypatch):
    said = []
    assert compare.audit(seeds_study / "seed0", 1, model_factory=Factory(), log=said.append)
    assert len(said) == 3 and all("first 1 step(s) re-run, compared bit for bit: the same" in s for s in said), said
    edited = tmp_path / "seed0"
    shutil.copytree(seeds_study / "seed0", edited)
    rows = [json.loads(x) for x in (edited / "grpo" / "metrics.jsonl").read_text().splitlines()]
    rows[1]["reward_mean"] += 0.25  # step 1: a better reward, nothing the merge re-derives
    (edited / "grpo" / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    monkeypatch.setattr(compare, "cpu_name", lambda: "Another CPU")  # another machine: rewards and kept rows still compared
    said.clear()
    assert not compare.audit(edited, 1, model_factory=Factory(), log=said.append)
    assert "grpo: its first 1 step(s) re-run, compared kept indices and rewards only (made on " in said[0] and said[0].endswith(
        "differ at step 1") and said[1].endswith("the same"), said
