"""The PODS authors' released runs (minipods/analysis/data/pods_paper_runs.csv) and their reader."""

import math
import tomllib
from collections import Counter
from pathlib import Path

import pytest

from minipods.analysis import paper_runs as P

ROOT = Path(__file__).resolve().parent.parent
TRAINED = ["GSM8K-512-128-16", "GSM8K-512-16-16", "GSM8K-512-256-16", "GSM8K-512-32-16", "GSM8K-512-64-16",
           "GSM8K-512-64-2", "GSM8K-512-64-4", "GSM8K-512-64-8", "GSM8K-MaxR-512-64-16", "GSM8K-Rand-512-64-16",
           "Llama-512-16-16-0.04", "Llama-512-64-16-0.04", "MATH-NF-512-32-8", "MATH-NF-512-8-8"]


@pytest.fixture(scope="module")
def rows():
    return P.read_rows()


@pytest.mark.docs
def test_data_ships_with_its_notice_and_as_package_data():
    folder = P.CSV.parent
    assert P.CSV.is_file() and P.CSV.parent.parent == Path(P.__file__).parent
    readme, licence = (folder / "README.md").read_text(), (folder / "LICENSE-pods").read_text()
    assert "Apache License" in readme and "YixuanEvenXu/pods" in readme and "187f43b" in readme
    assert "Changed from the" in readme  # Apache-2.0 4(b): a modified file says so
    assert licence.lstrip().startswith("Apache License") and "Version 2.0, January 2004" in licence
    globs = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]
    shipped = {f"data/{p.name}" for p in folder.iterdir() if p.is_file()}
    assert shipped == set(globs["minipods.analysis"])  # every file there goes into a wheel


def test_shape_settings_runs_checkpoints_benchmarks(rows):
    assert len(rows) == 4577
    configs = Counter(r["config"] for r in rows)
    assert sorted(c for c in configs if not c.startswith("base-")) == sorted(TRAINED)
    runs = {c: {r["run"] for r in rows if r["config"] == c} for c in TRAINED}
    assert all(v == set(range(1, 11)) for v in runs.values())
    benches = {c: {r["benchmark"] for r in rows if r["config"] == c} for c in configs}
    for c in configs:
        want = {"gsm8k"} if c.startswith("Llama") else {"gsm8k", "math500", "amc23"}
        assert benches[c] == want, c
    ckpts = Counter((r["config"], r["run"]) for r in rows if r["benchmark"] == "gsm8k" and r["config"] in TRAINED)
    odd = {k: v for k, v in ckpts.items() if v != 12}
    assert len(ckpts) == 140 and odd == {("GSM8K-512-64-2", 9): 14, ("GSM8K-512-64-2", 10): 14,
                                         ("Llama-512-64-16-0.04", 4): 11}
    assert all(r["hours"] == r["checkpoint"] * 0.5 for r in rows)
    assert all(r["step"] > 0 for r in rows if r["checkpoint"] > 0)
    assert all(abs(r["answer_acc"] - sum(r["answer_acc_repeats"]) / 5) < 1e-5 for r in rows)
    assert [(r["config"], r["run"], r["checkpoint"], r["step"]) for r in rows if r["config"].startswith("base")] == \
        [(c, 0, 0, 0) for c in ("base-llama",) * 3 + ("base-qwen",) * 3]


def test_base_accuracy_and_setting_names(rows):
    assert P.base_accuracy("gsm8k", rows=rows) == pytest.approx(0.599545)
    assert P.base_accuracy("gsm8k", "llama", rows=rows) == pytest.approx(0.237756)
    with pytest.raises(ValueError):
        P.base_accuracy("aime24", rows=rows)
    assert P.setting("GSM8K-Rand-512-64-16") == {"task": "GSM8K", "rule": "random", "n": 64, "m": 16, "model": "qwen"}
    assert P.setting("Llama-512-64-16-0.04")["model"] == "llama"
    assert P.setting("GSM8K-512-16-16")["rule"] == "max_variance"
    with pytest.raises(ValueError):
        P.setting("GSM8K-512-64")


def test_study_is_run_setting_points_from_base_to_six_hours(rows):
    s = P.paper_study("gsm8k", ["GSM8K-512-16-16", "GSM8K-512-64-2"], rows=rows)
    assert sorted(s) == list(range(1, 11)) and all(list(a) == ["GSM8K-512-16-16", "GSM8K-512-64-2"] for a in s.values())
    pts = s[1]["GSM8K-512-16-16"]
    assert [p.seconds for p in pts] == [1800.0 * k for k in range(13)]
    assert pts[0] == (0.0, 0, pytest.approx(0.599545), 1319 * 5, None)  # seconds, step, accuracy, answers, per question
    assert pts[1].step > 0 and all(a.step < b.step for a, b in zip(pts, pts[1:]))
    first = [r for r in rows if (r["config"], r["run"], r["checkpoint"], r["benchmark"]) == ("GSM8K-512-16-16", 1, 1, "gsm8k")]
    assert (pts[1].step, pts[1].accuracy) == (first[0]["step"], first[0]["answer_acc"])
    assert all(len(a["GSM8K-512-64-2"]) == 13 for a in s.values())  # the two 7-hour runs cut at 6 h
    assert sum(len(a["GSM8K-512-64-2"]) for a in P.paper_study("gsm8k", ["GSM8K-512-64-2"], max_hours=9, rows=rows).values()) == 134
    llama = P.paper_study("gsm8k", ["Llama-512-64-16-0.04"], base=False, rows=rows)
    assert [len(llama[r]["Llama-512-64-16-0.04"]) for r in range(1, 11)] == [12, 12, 12, 11] + [12] * 6
    m5 = P.paper_study("math500", rows=rows)
    assert len(m5[3]) == 12 and not any(k.startswith("Llama") for k in m5[3])  # Llama: gsm8k only
    assert m5[3]["MATH-NF-512-8-8"][0].n == 500 * 5


def test_seconds_per_step_give_the_papers_l40s_step_times(rows):
    """The checkpoints' step counts: vanilla GRPO ~7.5 s and PODS 64 -> 16 ~10.1 s a step (the paper, Sec. 5)."""
    sps = P.seconds_per_step(P.paper_study("gsm8k", ["GSM8K-512-16-16", "GSM8K-512-64-16"], rows=rows))
    assert [len(v) for v in sps.values()] == [10, 10]
    assert sum(sps["GSM8K-512-16-16"]) / 10 == pytest.approx(7.5, abs=0.15)
    assert sum(sps["GSM8K-512-64-16"]) / 10 == pytest.approx(10.1, abs=0.15)


def test_fit_step_cost_recovers_a_known_plane():
    per = {f"GSM8K-512-{n}-{m}": [4.0 + 0.05 * n + 0.1 * m + e for e in (-0.2, 0.2)]
           for n, m in [(16, 16), (64, 16), (256, 16), (64, 2), (64, 8)]}
    f = P.fit_step_cost(per)
    assert (f["c"], f["b_n"], f["b_m"]) == pytest.approx((4.0, 0.05, 0.1), abs=1e-9)
    assert f["runs"] == 10 and 0.9 < f["r2"] < 1.0
    assert f["fitted"]["GSM8K-512-64-16"] == pytest.approx(4.0 + 3.2 + 1.6)
    assert not math.isnan(f["r2"])


def test_by_hours_mean_curve_and_only(rows):
    s = P.paper_study("gsm8k", ["GSM8K-512-16-16", "GSM8K-512-64-16"], rows=rows)
    cut = P.by_hours(s, 2.0)
    assert [p.seconds for p in cut[3]["GSM8K-512-64-16"]] == [0.0, 1800.0, 3600.0, 5400.0, 7200.0]
    assert cut[3]["GSM8K-512-64-16"][-1] == s[3]["GSM8K-512-64-16"][4]  # its final evaluation = its accuracy at 2 h
    curve = P.mean_curve(s, "GSM8K-512-16-16")
    assert len(curve) == 13 and curve[0].accuracy == pytest.approx(0.599545) and curve[0].n is None
    assert curve[8].accuracy == pytest.approx(sum(s[r]["GSM8K-512-16-16"][8].accuracy for r in s) / 10)
    assert curve[8].step == round(sum(s[r]["GSM8K-512-16-16"][8].step for r in s) / 10)
    assert max(range(13), key=lambda i: curve[i].accuracy) == 8  # GRPO's mean curve peaks at 4 h
    llama = P.mean_curve(P.paper_study("gsm8k", ["Llama-512-64-16-0.04"], rows=rows), "Llama-512-64-16-0.04")
    assert len(llama) == 12  # cut to the checkpoints every run has (run 4 stops at 5.5 h)
    assert list(P.only(s, ["GSM8K-512-64-16"])[1]) == ["GSM8K-512-64-16"]
