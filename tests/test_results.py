"""minipods.analysis.summary on hand-made studies (the seed is the unit: per-seed differences, their
t-interval and sign-flip p, the pooled interval only as these seeds' questions) and
minipods.analysis.results reading run folders into a study; known answers throughout."""

import csv
import json
import math
import statistics

import pytest

from minipods.analysis import plots, results
from minipods.stats import paired_difference
from minipods.analysis.summary import (FINAL, LEARNING, Point, difference, format_difference, resolvable,
                                       summarize_study, summary_lines, time_averaged, write_summary)
from minipods.checkpoint import eval_path

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _csv(path):
    with open(path) as f:
        return list(csv.DictReader(f))


def _pts(*evals):
    """[(seconds, step, [0/1 per question])] -> Points carrying their questions."""
    return [Point(t, s, sum(c) / len(c), len(c), dict(enumerate(c))) for t, s, c in evals]


STUDY = {  # b - a per seed: +0.5, +0.25, 0.0 on 4 questions each
    0: {"a": _pts((0, 0, [0, 0, 0, 0]), (10, 8, [1, 0, 0, 0])), "b": _pts((0, 0, [0, 0, 0, 0]), (12, 8, [1, 1, 1, 0]))},
    1: {"a": _pts((0, 0, [1, 0, 0, 0]), (10, 8, [1, 1, 0, 0])), "b": _pts((0, 0, [1, 0, 0, 0]), (12, 8, [1, 1, 1, 0]))},
    2: {"a": _pts((0, 0, [0, 0, 0, 1]), (10, 8, [0, 1, 0, 1])), "b": _pts((0, 0, [0, 0, 0, 1]), (12, 8, [1, 0, 0, 1]))},
}


def test_difference_leads_with_the_seeds_and_pools_only_as_these_seeds_questions():
    d = difference(STUDY, "a", "b")
    assert [v["diff"] for v in d["per_seed"].values()] == [0.5, 0.25, 0.0]
    assert d["per_seed"][0]["paired"] == paired_difference([1, 0, 0, 0], [1, 1, 1, 0])
    m = d["seeds"]  # mean 0.25, sd 0.25: 0.25 +- 4.303 * 0.25 / sqrt(3)
    assert (m["mean"], m["k"]) == (0.25, 3)
    assert (m["lo"], m["hi"]) == pytest.approx((0.25 - 4.303 * 0.25 / math.sqrt(3), 0.25 + 4.303 * 0.25 / math.sqrt(3)))
    assert m["p"] == 4 / 8  # +-0.5, +-0.25, +-0: sums >= 0.75 in |.|: (+,+,+-) and (-,-,+-)
    assert d["pooled"] == paired_difference([1, 0, 0, 0, 1, 1, 0, 0, 0, 1, 0, 1], [1, 1, 1, 0, 1, 1, 1, 0, 1, 0, 0, 1])
    line = format_difference(d)
    assert line.startswith("+25.0 points [−37.1, +87.1] over 3 seeds (t 95% CI; sign-flip p 0.5); per seed +50.0 [")
    assert "; these seeds' 12 questions pooled +25.0 [" in line
    # learning of one arm: first vs final of the same arm
    learn = difference(STUDY, "a", "a", LEARNING)
    assert [v["diff"] for v in learn["per_seed"].values()] == [0.25, 0.25, 0.25]


def test_one_seed_is_the_one_seed_case_and_no_questions_no_pooled_interval():
    one = difference({0: STUDY[0]}, "a", "b")
    assert one["seeds"]["lo"] is None and one["pooled"] == one["per_seed"][0]["paired"]
    lo, hi = one["per_seed"][0]["paired"]["ci95"]
    assert format_difference(one) == (f"+50.0 points [{100 * lo:+.1f}, {100 * hi:+.1f}]".replace("-", "−") +
                                      " on this seed's 4 questions (McNemar p 0.5; one run: no seed-level interval)")
    bare = {s: {a: [p._replace(correct=None) for p in pts] for a, pts in by.items()} for s, by in STUDY.items()}
    d = difference(bare, "a", "b", FINAL)
    assert d["pooled"] is None and all(v["paired"] is None for v in d["per_seed"].values())
    assert d["seeds"]["mean"] == 0.25 and "pooled" not in format_difference(d)


def test_the_five_seed_study_from_its_per_seed_finals():
    final = {"grpo": [41.4, 49.2, 9.4, 57.0, 45.3], "pods_max_variance": [29.7, 37.5, 30.5, 57.8, 53.9],
             "pods_random": [3.1, 39.1, 39.8, 34.4, 29.7]}
    study = {s: {a: [Point(0, 32, v[s] / 100, 128)] for a, v in final.items()} for s in range(5)}
    d = difference(study, "pods_random", "pods_max_variance")
    assert format_difference(d, per_seed=False) == "+12.7 points [−8.2, +33.5] over 5 seeds (t 95% CI; sign-flip p 0.25)"
    d = difference(study, "grpo", "pods_max_variance")
    assert format_difference(d, per_seed=False) == "+1.4 points [−16.0, +18.8] over 5 seeds (t 95% CI; sign-flip p 0.94)"


def _run_folder(d, evals, steps=()):
    """A run folder: evals = [(step, seconds, [0/1 per question])] (metrics rows and eval files)."""
    rows = [{"step": s, "elapsed_s": t, "step_s": 1.0, "rollout_s": 0.75, "update_s": 0.25, "zero_std_frac": 0.5,
             "reward_mean": 0.1, "kept_reward_mean": 0.2, "peak_mem_mb": 10.0 + s} for s, t in steps]
    for step, t, correct in evals:
        row = next((r for r in rows if r["step"] == step), None)
        if row is None:
            rows.append(row := {"step": step, "elapsed_s": t})
        row.update(eval_accuracy=sum(correct) / len(correct), eval_n=len(correct))
        eval_path(d, step).parent.mkdir(parents=True, exist_ok=True)
        eval_path(d, step).write_text("".join(json.dumps({"index": i, "gold": "1", "pred": "1", "correct": c}) + "\n"
                                              for i, c in enumerate(correct)))
    rows.sort(key=lambda r: r["step"])
    (d / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return d


def test_read_study_and_costs_from_run_folders(tmp_path):
    run = _run_folder(tmp_path / "s0" / "pods", [(0, 0.0, [0, 1]), (2, 2.0, [1, 1])], [(1, 1.0), (2, 2.0)])
    study = results.read_study({0: {"pods": run}})
    assert study[0]["pods"] == [Point(0.0, 0, 0.5, 2, {0: 0, 1: 1}), Point(2.0, 2, 1.0, 2, {0: 1, 1: 1})]
    c = results.summarize({"pods": results.read_rows(run)})[0]
    assert (c["steps"], c["train_s"], c["mean_step_s"], c["mean_rollout_s"], c["peak_mem_mb"]) == (2, 2.0, 1.0, 0.75, 12.0)
    assert (c["peak_accuracy"], c["final_accuracy"]) == (1.0, 1.0)


def test_write_summary_files_carry_the_seed_level_numbers(tmp_path):
    s = summarize_study(STUDY, baseline="a", focus="b", costs={"a": {"mean_step_s": 2.0}})
    md, csv_path = write_summary(s, tmp_path, {"a": {"method": "grpo", "n": 4, "m": 4}})
    rows = {r["arm"]: r for r in _csv(csv_path)}
    assert float(rows["a"]["vs_focus_mean"]) == 0.25 and int(rows["a"]["vs_focus_k"]) == 3
    assert float(rows["a"]["vs_focus_p"]) == 0.5 and int(rows["a"]["vs_focus_questions_n"]) == 12
    assert float(rows["a"]["mean_step_s"]) == 2.0 and rows["a"]["method"] == "grpo" and rows["a"]["rule"] == ""
    assert float(rows["b"]["learn_mean"]) == pytest.approx(0.5) and rows["b"]["vs_focus_mean"] == ""
    text = md.read_text()
    assert "- `b` minus `a`, final evaluations: +25.0 points [−37.1, +87.1] over 3 seeds" in text
    assert "| a | 4 | 4 | 41.7 [" in text and "no target: `a`'s step-0 evaluation meets it" in text


def test_summary_says_what_its_seeds_can_and_cannot_resolve():
    se = 0.25 / math.sqrt(3)  # diffs +0.5, +0.25, 0: sd 0.25
    assert resolvable([0.5, 0.25, 0.0]) == pytest.approx((4.303 * se, (4.303 + 0.8416) * se))
    assert resolvable([0.3]) is None
    text = "\n".join(summary_lines(summarize_study(STUDY, baseline="a", focus="b")))
    assert "What 3 seeds can resolve" in text and "at least 2/2^3 = 0.25: no difference can reach p < 0.05" in text
    assert f"the interval is ±{100 * 4.303 * se:.1f} points" in text and f"under ~{100 * 5.1446 * se:.1f} points" in text
    one = "\n".join(summary_lines(summarize_study({0: STUDY[0]}, baseline="a", focus="b")))
    assert "- One seed: no seed-level interval" in one and "sign-flip" not in one.split("What 1 seed")[1]
    six = {s: STUDY[s % 3] for s in range(6)}
    text6 = "\n".join(summary_lines(summarize_study(six, baseline="a", focus="b")))
    assert "at least 2/2^6 = 0.0312." in text6
    pts = (lambda *ta: [Point(s, i, acc, 100) for i, (s, acc) in enumerate(ta)])  # b reaches a's 50% 2x, 2.5x sooner
    two = {0: {"a": pts((0, 0), (10, .5), (20, .5)), "b": pts((0, 0), (5, .5), (20, .5))},
           1: {"a": pts((0, 0), (10, .5), (20, .5)), "b": pts((0, 0), (4, .5), (20, .5))}}
    h = 12.706 * math.log(2.5 / 2) / 2  # t975(1) sd / sqrt(2), sd = |log 2.5 - log 2| / sqrt(2)
    assert f"(2 seeds with a ratio): the interval is ×/÷{math.exp(h):.2f}" in "\n".join(
        summary_lines(summarize_study(two, baseline="a", focus="b")))



def test_time_averaged_accuracy_by_hand():
    curve = (lambda *ta: [Point(t, i, acc) for i, (t, acc) in enumerate(ta)])
    # trapezoids 100 * (0.1 + 0.3) / 2 + 200 * (0.3 + 0.5) / 2 = 20 + 80, over 300 s
    assert time_averaged(curve((0, .1), (100, .3), (300, .5)), 300) == pytest.approx(100 / 300)
    # the last evaluation lands 20 s after the 240 s budget: the segment is cut at 240 s (0.4 -> 0.6), later ones ignored
    late = curve((0, .2), (200, .4), (260, .7), (400, 0.0))
    assert time_averaged(late, 240) == pytest.approx((200 * 0.3 + 40 * 0.5) / 240)
    # a curve ending before the budget holds its last value; one starting after 0 s its first
    assert time_averaged(curve((0, .2), (100, .6)), 300) == pytest.approx((100 * 0.4 + 200 * 0.6) / 300)
    assert time_averaged(curve((50, .4), (100, .6)), 100) == pytest.approx((50 * 0.4 + 50 * 0.5) / 100)
    assert time_averaged(curve((0, .2), (100, .6)), 0) == 0.2
    # one collapsed evaluation moves the average by its share of the time, not the whole reading
    dip = curve((0, .5), (100, .5), (200, 0.0), (300, .5), (400, .5))
    assert time_averaged(dip, 400) == pytest.approx((400 * 0.5 - 200 * 0.5 / 2) / 400)


def test_time_averaged_in_the_summary_per_arm_per_seed_and_its_label(tmp_path):
    # no budget: each seed's horizon is its arms' earliest end (a at 10 s; b's 12 s evaluation cut there)
    s = summarize_study(STUDY, baseline="a", focus="b")
    ta = (lambda y0, y1, t1: (y0 + y0 + (y1 - y0) * 10 / t1) / 2)  # one segment from 0 s, cut at 10 s
    want = [ta(0, .75, 12) - ta(0, .25, 10), ta(.25, .75, 12) - ta(.25, .5, 10), ta(.25, .5, 12) - ta(.25, .5, 10)]
    d = s["averaged_versus"]["a"]
    assert [v["diff"] for v in d["per_seed"].values()] == pytest.approx(want) == [0.1875, 1 / 12, -1 / 48]
    assert d["seeds"]["sd"] == pytest.approx(statistics.stdev(want)) and d["seeds"]["p"] == 4 / 8
    assert s["averaged"]["a"]["mean"] == pytest.approx(sum(time_averaged(by["a"], 10) for by in STUDY.values()) / 3)
    text = "\n".join(summary_lines(s))
    assert "- `b` minus `a`, time-averaged accuracy (no primary declared): +" in text
    assert f"time-averaged accuracy {100 * d['seeds']['sd']:.1f} points" in text
    assert f"final accuracy {100 * 0.25:.1f} points" in text  # the final differences' SD, beside it
    # a budget: every arm's curve read to it, the last value held
    s = summarize_study(STUDY, baseline="a", focus="b", budget_s=20.0, note=("primary", "the primary statistic"))
    assert s["averaged"]["b"]["mean"] == pytest.approx(sum(time_averaged(by["b"], 20) for by in STUDY.values()) / 3)
    text = "\n".join(summary_lines(s))
    assert "time-averaged accuracy (primary): " in text and "from 0 to 20 s, divided" in text
    assert "from 0 to 20.00 h, divided" in "\n".join(summary_lines(s, unit="h"))  # budget and Points in one unit
    rows = {r["arm"]: r for r in _csv(write_summary(s, tmp_path)[1])}
    assert float(rows["a"]["averaged_vs_focus_mean"]) == pytest.approx(s["averaged_versus"]["a"]["seeds"]["mean"])
    assert float(rows["b"]["averaged_mean"]) == pytest.approx(s["averaged"]["b"]["mean"])


# ---------------------------------------------------------------- update pricing: as run and re-priced
def _step(step, kept, silent, update_s, step_s, elapsed_s, acc=None):
    row = {"step": step, "kept_rows": kept, "silent_rows": silent, "update_s": update_s, "rollout_s": step_s - update_s,
           "step_s": step_s, "elapsed_s": elapsed_s, "reward_mean": 0.5, "kept_reward_mean": 0.5}
    return {**row, "eval_accuracy": acc, "eval_n": 100} if acc is not None else row


# skip_silent ran 2, 1 (a placeholder: all 4 silent) and 3 rows: 3.0 s / 6 rows = 0.5 s per processed row
SKIP_ROWS = [_step(1, 4, 2, 1.0, 3.0, 3.0, 0.5), _step(2, 4, 4, 0.2, 2.2, 5.2, 0.6), _step(3, 4, 1, 1.8, 3.8, 9.0, 0.6)]


def test_repriced_seconds_scale_each_update_by_its_rows():
    # every_row: 1.0 * 4/2 = 2.0; the all-silent step 0.5 s/row * 4 = 2.0; 1.8 * 4/3 = 2.4 (+1.0, +1.8, +0.6)
    got = results.repriced_seconds(SKIP_ROWS, "skip_silent", "every_row")
    assert got == pytest.approx({0: 0, 1: 4.0, 2: 8.0, 3: 12.4})
    every = [_step(1, 4, 2, 2.0, 3.0, 3.0), _step(2, 4, 4, 2.0, 3.0, 6.0)]  # skip_silent: 2 rows, then 1 (placeholder)
    assert results.repriced_seconds(every, "every_row", "skip_silent") == pytest.approx({0: 0, 1: 2.0, 2: 3.5})


def _priced_folder(d, rows, cfg):
    d.mkdir(parents=True)
    first = {"step": 0, "elapsed_s": 0.0, "eval_accuracy": 0.2, "eval_n": 100}
    (d / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in [first] + rows))
    (d / "config.json").write_text(json.dumps(cfg))
    return d


def test_summary_names_each_pricing_and_gives_time_to_target_under_both(tmp_path):
    pods = [_step(s, 2, 0, 1.0, 4.0, 4.0 * s, 0.6) for s in (1, 2, 3)]  # no silent rows: the same either way
    dirs = {"grpo": _priced_folder(tmp_path / "grpo", SKIP_ROWS, {"method": "grpo", "update_pricing": "skip_silent"}),
            "pods": _priced_folder(tmp_path / "pods", pods, {"method": "pods", "update_pricing": "skip_silent"})}
    plots.make({0: dirs}, tmp_path, baseline="grpo")
    md = (tmp_path / "summary.md").read_text()
    assert "Update pricing (config.json): `grpo` skip_silent, `pods` skip_silent." in md
    # grpo reaches its plateau (0.6) at step 2: 5.2 s as run, 8.0 s re-priced; pods at step 1, 4 s both ways
    assert "| pods | 1/1; 4 s, 1.0 steps | 1.30x (1 of 1 seeds, 0 censored) | 1/1; 4 s, 1.0 steps | 2.00x (1 of 1 seeds, " \
           "0 censored) |" in md
    assert "| grpo | 1/1; 5 s, 2.0 steps | - | 1/1; 8 s, 2.0 steps | - |" in md
    assert "| arm | as run | speed-up as run | re-priced to every_row (estimate from per-row costs) |" in md
    study = results.read_study({0: dirs})  # a run that paid every row at beta > 0 has no skip_silent price
    got = results.repriced_study(study, {0: {a: results.read_rows(d) for a, d in dirs.items()}},
                                 {a: {"update_pricing": "every_row", "beta": 0.04} for a in dirs})
    assert got == ("skip_silent", "`grpo` ran with beta 0.04, where leaving silent rows out is not exact")
