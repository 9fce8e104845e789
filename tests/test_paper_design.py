"""The paper's experiment at laptop scale: the presets match the authors' run, the evaluation time
grid, the update's pricing recorded per run, compare's arms, the power calculation, and the study's
table in docs/results.md computed from its run folders."""
import json
import math

import numpy as np
import pytest

import minipods.train as T
from minipods.analysis import compare
from minipods.twins.tiny import tiny_policy


def test_paper_preset_is_the_authors_run():
    p = T.make_config("paper", method="pods")
    g = T.make_config("paper", method="grpo")
    assert (p.n, p.m, g.n, g.m, p.prompts_per_step) == (64, 16, 16, 16, 1)  # per_device_train_batch_size 1
    assert (p.lr, p.max_grad_norm, p.weight_decay, p.adam_beta1, p.adam_beta2) == (5e-6, 0.1, 0.1, 0.9, 0.99)
    assert (p.loss_type, p.skip_silent, p.beta) == ("grpo", False, 0.0)  # their compute_loss, every row pays
    assert (p.budget_s, p.max_steps, p.eval_every_s, p.eval_every) == (21600, 8000, 1800, 0)  # max_time, 30 min grid
    assert (p.eval_limit, p.data, p.temperature, p.max_new_tokens) == (1319, "gsm8k", 0.9, 512)


def test_laptop_preset_is_the_papers_step_at_cpu_scale():
    p, g = T.make_config("laptop", method="pods"), T.make_config("laptop", method="grpo")
    assert (p.n // p.m, p.m, g.n, g.m, p.prompts_per_step) == (4, 4, 4, 4, 1)  # n/m = 4, GRPO with the same m
    assert (p.loss_type, p.skip_silent, g.skip_silent) == ("grpo", False, False)
    assert p.budget_s > 0 and p.eval_every_s > 0 and p.eval_every == 0  # equal time, one time grid
    # the classroom run (compare --small) is this preset's three arms
    c = compare.arm_configs(preset=compare.SMALL_PRESET)
    assert list(c) == ["grpo", "pods_max_variance", "pods_random"]
    assert [(x.n, x.m, x.rule) for x in c.values()] == [(4, 4, "max_variance"), (16, 4, "max_variance"), (16, 4, "random")]
    assert {(x.budget_s, x.eval_every_s, x.eval_every, x.loss_type) for x in c.values()} == {
        (p.budget_s, p.eval_every_s, 0, "grpo")}
    # the old study, the 4-prompt n/m = 2 variant, is still --preset small with its four arms and step grid
    old = compare.arm_configs(preset="small")
    assert list(old) == list(compare.SMALL_ARMS) and old["grpo"].eval_every == compare.SMALL_EVAL_EVERY


def test_eval_due_by_steps_and_by_training_time():
    by_step = T.make_config(None, eval_every=3)
    assert [s for s in range(1, 10) if T.eval_due(by_step, s, 0, 0)] == [3, 6, 9]
    by_time = T.make_config(None, eval_every_s=25.0)
    assert not T.eval_due(by_time, 2, 10.0, 20.0)
    assert T.eval_due(by_time, 3, 20.0, 30.0)  # the step that crosses 25 s
    assert T.eval_due(by_time, 9, 74.0, 76.0) and not T.eval_due(by_time, 10, 76.0, 99.9)
    assert T.eval_due(by_time, 4, 20.0, 51.0)  # two grid points in one step: one evaluation
    assert not T.eval_due(T.make_config(None), 4, 0.0, 100.0)  # neither set: never (only first and last)


def test_time_grid_evaluations_and_the_pricing_are_recorded(tmp_path, monkeypatch):
    real_step = T.run_step

    def ten_second_step(*a, **kw):  # a fixed clock: each step takes 10 s of training time
        return {**real_step(*a, **kw), "step_s": 10.0}

    monkeypatch.setattr(T, "run_step", ten_second_step)
    cfg = T.make_config(None, data="synthetic", n=4, m=2, prompts_per_step=2, max_new_tokens=8, max_steps=6,
                        lr=5e-2, lora_r=4, lora_alpha=8, temperature=1.5, micro_batch_size=2, eval_every_s=25.0,
                        eval_limit=2, eval_max_new_tokens=4, output_dir=str(tmp_path), progress=False,
                        skip_silent=False, loss_type="grpo")
    model, tok = tiny_policy(seed=0, lora_r=4, lora_alpha=8)
    T.train(cfg, model=model, tokenizer=tok)
    rs = [json.loads(x) for x in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    steps = [r for r in rs if r["step"] > 0]
    assert [r["elapsed_s"] for r in steps] == [10.0, 20.0, 30.0, 40.0, 50.0, 60.0]
    # 0, the first step ends at or after 25 s and 50 s, and the last
    assert [r["step"] for r in rs if "eval_accuracy" in r] == [0, 3, 5, 6]
    assert all(r["kept_rows"] == 4 and 0 <= r["silent_rows"] <= 4 for r in steps)
    conf = json.loads((tmp_path / "config.json").read_text())
    assert (conf["skip_silent"], conf["loss_type"], conf["update_pricing"]) == (False, "grpo", "every_row")


@pytest.mark.parametrize("kw, pricing", [(dict(), "skip_silent"), (dict(fast=False), "every_row"),
                                         (dict(beta=0.1), "every_row"), (dict(skip_silent=False), "every_row")])
def test_update_pricing_names_what_the_update_paid(tmp_path, kw, pricing):
    cfg = T.make_config(None, data="synthetic", n=2, m=2, prompts_per_step=1, max_new_tokens=4, max_steps=1,
                        lora_r=4, lora_alpha=8, output_dir=str(tmp_path), progress=False, **kw)
    model, tok = tiny_policy(seed=0, lora_r=4, lora_alpha=8)
    T.train(cfg, model=model, tokenizer=tok)
    assert json.loads((tmp_path / "config.json").read_text())["update_pricing"] == pricing


def test_compare_default_and_laptop_arms():
    assert list(compare.arm_configs(preset="laptop")) == list(compare.LAPTOP_ARMS)
    assert list(compare.arm_configs()) == list(compare.DEFAULT_ARMS)


def _script(name):
    import importlib.util
    from pathlib import Path
    path = Path(__file__).resolve().parents[1] / "scripts" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_power_of_the_paired_t_test_and_the_design_numbers():
    D = _script("study_design")
    # the textbook case: a one-sample t-test with effect = SD needs 10 observations for 80% (power 0.803)
    assert D.t_test_power(10, 1.0, 1.0) == pytest.approx(0.803, abs=0.015)
    assert D.t_test_power(9, 1.0, 1.0) < 0.79 and D.seeds_needed(1.0, 1.0) == 10
    assert D.t_test_power(10, 0.0, 1.0) == pytest.approx(0.05, abs=0.01)  # the null rejects 5% of the time
    assert D.detectable(10, 1.0) == pytest.approx(1.0, abs=0.05)
    sp = D.old_spreads()  # log(320/364), log(313/354), log(405/336) from docs/results.md
    assert sp["log_ratios"] == [-0.129, -0.123, 0.187] and sp["sd_log"] == pytest.approx(0.181, abs=5e-4)
    assert sp["sd_acc"] == pytest.approx(14.0, abs=0.05)
    # rollouts a + b * sequences through (16, 6.8) and (32, 8.9); update 9.0 s over 16 live rows
    assert D.step_estimate(4, 4) == pytest.approx(4.7 + 0.13125 * 4 + 0.5625 * 4)
    w = D.arm_wall_estimate(900, 180, 100)
    assert w["evals"] == 6 and w["eval_s"] == pytest.approx(6 * 100 * 283 / 640)


def test_machine_probe_verdict(tmp_path, capsys):
    D = _script("study_design")

    def probe(elapsed_at_33, steps=33):
        d = tmp_path / f"p{elapsed_at_33}_{steps}"
        d.mkdir()
        rows = [{"step": 0, "elapsed_s": 0.0}] + [{"step": s, "elapsed_s": elapsed_at_33 * s / 33} for s in range(1, steps + 1)]
        (d / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
        return str(d)

    fit = D.probe_verdict(probe(200.0))  # 200 / 183 = 1.09x the pilot's machine
    assert "1.09x" in fit and "fit for laptop study seeds" in fit and "~219 GRPO steps" in fit
    slow = D.probe_verdict(probe(430.0))  # 2.35x: this sitting's AMD EPYC
    assert "2.35x" in slow and "too slow" in slow and "~102 GRPO steps" in slow
    p235 = probe(235.0)
    cls = D.probe_verdict(p235, "class")  # the class pilots' own machine: 1.00x of its 235 s, 1.28x the laptop's
    assert "1.00x" in cls and "fit for class study seeds" in cls and "~86 GRPO steps in 600 s" in cls
    assert "~67 GRPO steps in 600 s" in D.probe_verdict(probe(300.0), "class")  # 1.28x: 85.5 / 1.28
    assert "too slow for laptop study seeds" in D.probe_verdict(p235)
    with pytest.raises(ValueError, match="no step 33"):
        D.probe_verdict(probe(100.0, steps=20))
    with pytest.raises(SystemExit) as e:
        D.main(["--probe", str(tmp_path / "missing")])
    assert e.value.code == 2 and "metrics.jsonl" in capsys.readouterr().err


@pytest.mark.docs
def test_the_docs_study_table_is_computed_from_the_run_folders(tmp_path):
    from pathlib import Path
    T_ = _script("study_table")
    root = Path(__file__).resolve().parents[1]
    rows = T_.table(root / "studies" / "laptop10")
    docs = (root / "docs" / "results.md").read_text()
    assert len(rows) >= 18 and len(rows) % 3 == 0      # three arms a finished seed; seeds 0-5 at least
    assert [r for r in rows if r not in docs] == []     # every finished seed's row, as the docs print it
    # one arm by hand: accuracy (step) per grid point, steps, silent share, wall (evaluation) time
    run = tmp_path / "seed7" / "grpo"
    run.mkdir(parents=True)
    lines = [{"step": 0, "eval_accuracy": 0.125, "eval_s": 40.0},
             {"step": 1, "step_s": 7.0, "elapsed_s": 7.0, "zero_std_frac": 1.0},
             {"step": 2, "step_s": 7.0, "elapsed_s": 14.0, "zero_std_frac": 0.5},
             {"step": 2, "eval_accuracy": 0.31, "eval_s": 41.5}]
    (run / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in lines))
    (run / "DONE").write_text(json.dumps({"step": 2, "wall_s_this_call": 1234.4}))
    assert T_.arm_row(7, "grpo", run) == "| 7 | `grpo` | 12 | 31 (2) | 2 | 75% | 1,234 s (82 s) |"
    (tmp_path / "comparison.json").write_text(json.dumps({"seeds": [7], "arms": list(compare.LAPTOP_ARMS)}))
    assert T_.table(tmp_path) == []                     # its other two arms have not finished


@pytest.mark.docs
def test_the_readme_quotes_the_studys_own_summary():
    """The README's ten-seed numbers are the ones `compare` wrote in studies/laptop10/summary.md."""
    import re
    from pathlib import Path
    root = Path(__file__).resolve().parents[1]
    summary = (root / "studies" / "laptop10" / "summary.md").read_text()
    readme = (root / "README.md").read_text().replace("≤ ", "≤").replace("\n", " ")
    rows = [line for line in summary.splitlines() if line.startswith("| pods_max_variance |")]
    ratio = r"≤?\d\.\d\dx \[\d\.\d\d, \d\.\d\d\]"
    as_run, repriced = re.findall(ratio, rows[-1])     # the pricing table's row: as run, re-priced to skip_silent
    final = re.search(r"`pods_max_variance` minus `grpo`, final evaluations: (\S+) points (\[[^\]]+\])", summary)
    vs_random = re.search(r"`pods_max_variance` minus `pods_random`, final evaluations: (\S+ points \[[^\]]+\])", summary)
    assert final and vs_random
    assert as_run in readme and repriced in readme
    assert f"{final.group(1).lstrip('−+')} points {final.group(2)}" in readme and vs_random.group(1) in readme


def test_the_laptop_studys_time_averaged_accuracy_is_post_hoc_never_its_primary():
    from pathlib import Path
    summary = (Path(__file__).resolve().parents[1] / "studies" / "laptop10" / "summary.md").read_text()
    lines = [line for line in summary.splitlines() if "time-averaged accuracy" in line.lower()]
    assert len(lines) >= 4 and "primary)" not in summary and "primary statistic of this study" not in summary
    assert all("(post hoc)" in line for line in lines if line.startswith("- `pods_max_variance` minus"))
    assert "chosen after the ten-seed laptop study's seeds were seen (post hoc), never that study's primary" in summary


def test_class_study_sizing_noise_and_power_table():
    from pathlib import Path
    D = _script("study_design")
    m = {"eval_s_per_q": 0.5, "eval_s_per_q_max": 1.0, "overhead_s": 10.0, "step_s": {"grpo": 5.0, "pods_max_variance": 7.5}}
    z = D.class_sizing(m, {"budget_s": 600.0, "eval_every_s": 150.0, "eval_limit": 64})
    # 2 arms x 5 evaluations (0, 150, 300, 450, 600 s) x 64 questions x 0.5 s = 320 s; 2 x (600 + 10 + the probe's 4 s)
    assert (z["evals"], z["eval_s"], z["wall_s"], z["wall_s_slowest"]) == (5, 320, 1228 + 320, 1228 + 640)
    assert z["steps"] == {"grpo": 120, "pods_max_variance": 80} and z["eval_share"] == pytest.approx(320 / 1548)
    # the class preset at the laptop study's measured costs keeps the limits, even at its slowest evaluations
    real = D.class_sizing(D.measured(Path(__file__).resolve().parents[1] / "studies" / "laptop10"), T.PRESETS["class"])
    assert real["evals"] >= 5 and real["wall_s_slowest"] <= 30 * 60 and real["eval_share_slowest"] <= 0.25
    assert z["slack_30min"] == pytest.approx((1800 - 1228) / 320)
    # trapezoid weights over a 4-interval grid: 1/8, 1/4, 1/4, 1/4, 1/8; two arms' binomial noise at 50% on 100 questions
    assert D.eval_noise_sd(0.5, 100, 4.0, 1.0) == pytest.approx(100 * math.sqrt(2 * (2 / 64 + 3 / 16) * 0.25 / 100))
    rows = D.power_table({"sd 10": 10.0}, students=(10, 40))
    assert rows[0] == "| students (seeds) | sd 10 |"
    half, found = (float(x) for x in rows[2].split("|")[2].strip().lstrip("±").split(" / "))
    assert half == pytest.approx(2.262 * 10 / math.sqrt(10), abs=0.05) and found == pytest.approx(10.0, abs=0.6)
    assert rows[3].startswith(f"| 40 | ±{2.023 * 10 / math.sqrt(40):.1f} / ")  # t(39), not the normal's 1.96
    assert D.t975(39) == pytest.approx(2.0227, abs=5e-4) and D.t975(79) == pytest.approx(1.9905, abs=5e-4)


def test_the_power_statement_carries_the_sds_own_uncertainty():
    D = _script("study_design")
    for p, df, want in ((0.975, 11, 21.920), (0.025, 11, 3.816), (0.975, 1, 5.024), (0.025, 39, 23.654)):  # the tables
        assert D.chi2_quantile(p, df) == pytest.approx(want, abs=1e-3)
    lo, hi = D.sd_interval(9.6, 12)  # the reference class's SD over its 12 seeds
    assert (round(lo, 1), round(hi, 1)) == (6.8, 16.3)
    assert D.sd_range_line("x", 9.6, 12) == "x: SD 9.6 over 12 seeds, itself uncertain: 95% interval [6.8, 16.3] " \
        "(chi-square, 11 df); 40 students: ±3.1 points at SD 9.6, ±2.2 to ±5.2 over that interval"


def test_power_table_takes_a_column_per_merged_class_study(capsys):
    """--pilots is repeatable: the pilots' study and the reference class's each add a column whose SD is the spread of
    that study's per-seed time-averaged differences (from the committed pilots: one column per learning rate)."""
    from pathlib import Path
    D = _script("study_design")
    root = Path(__file__).resolve().parents[1]
    pilots = [str(root / "pilots" / "class" / lr) for lr in ("lr1e-4", "lr2e-4")]
    assert D.main(["--power-table", "--study", str(root / "studies" / "laptop10"), "--pilots", pilots[0],
                   "--pilots", pilots[1]]) == 0
    head = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("| students"))
    cols = [c.strip() for c in head.split("|")[2:-1]]
    assert len(cols) == 6  # laptop10's four, then one per --pilots in order
    for col, study in zip(cols[4:], pilots):
        diffs = D.averaged_diffs(study)["diffs"]
        assert col == f"{study}: SD {float(np.std(diffs, ddof=1)):.1f} over {len(diffs)} seeds" and len(diffs) == 2


@pytest.mark.docs
def test_the_docs_quote_the_class_studys_own_summary():
    """The class study's primary (fixed before its seeds ran) as docs/class_study.md quotes it is the line
    `compare --merge` wrote in studies/class12/summary.md, and that line says it is the primary."""
    import re
    from pathlib import Path
    root = Path(__file__).resolve().parents[1]
    summary = (root / "studies" / "class12" / "summary.md").read_text()
    meta = json.loads((root / "studies" / "class12" / "comparison.json").read_text())
    assert meta["primary"] == "time_averaged" and meta["seeds"] == list(range(12)) and meta["preset"] == "class"
    prim = re.search(r"`pods_max_variance` minus `grpo`, time-averaged accuracy \(primary\): (\S+) points (\[[^\]]+\]) "
                     r"over 12 seeds \(t 95% CI; sign-flip p ([\d.e-]+)\)", summary)
    assert prim, "the merged summary's primary line"
    quoted = f"{prim.group(1)} points {prim.group(2)}"
    texts = {doc: (root / doc).read_text().replace("\n", " ") for doc in ("docs/class_study.md", "README.md")}
    for doc, text in texts.items():
        assert quoted in text and f"p {prim.group(3)}" in text, doc
    readme = texts["README.md"].replace("≤ ", "≤")  # as test_the_readme_quotes_the_studys_own_summary reads it
    final = re.search(r"`pods_max_variance` minus `grpo`, final evaluations: (\S+ points \[[^\]]+\])", summary)
    speedup = re.search(r"≤\d\.\d\dx \[\d\.\d\d, \d\.\d\d\]", summary)
    misses = re.search(r"Time-averaged accuracy, `pods_max_variance` minus `grpo`: .*?under (~[\d.]+) points", summary)
    assert final.group(1) in readme and speedup.group(0) in readme
    assert f"under {misses.group(1)} points" in readme
