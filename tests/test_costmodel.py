"""minipods.measure.costmodel: fitted lines, step times, break-even arithmetic on known numbers; the bench part."""

import math

import pytest

from minipods.measure import bench, costmodel as C
from minipods.measure.bench import run_bench
from minipods.measure.config import BenchConfig
from minipods.twins.tiny import tiny_policy


def _model():
    # rollout 2 s + 0.5 s per sequence generated; update 1 s + 2 s per sequence kept
    return C.CostModel(C.Line(2.0, 0.5), C.Line(1.0, 2.0))


def test_fit_line_recovers_a_and_b():
    line = C.fit_line([4, 8, 16], [2 + 0.5 * x for x in (4, 8, 16)])
    assert (line.a, line.b, line.r2) == pytest.approx((2.0, 0.5, 1.0))
    assert line(10) == pytest.approx(7.0)


def test_step_seconds_of_the_three_methods():
    t = _model().step_seconds(n=16, m=4, prompts=2)
    # GRPO: generate 8, train 8 -> (2 + 4) + (1 + 16) = 23; all n: (2 + 16) + (1 + 64) = 83; PODS: 18 + 17 = 35
    assert (t["grpo"], t["grpo_all"], t["pods"]) == pytest.approx((23.0, 83.0, 35.0))
    assert t["parts"] == pytest.approx({"rollout_m": 6.0, "rollout_n": 18.0, "update_m": 17.0, "update_n": 65.0})
    with pytest.raises(ValueError):
        _model().step_seconds(n=4, m=8)


def test_break_even_and_n_max():
    be = _model().break_even(n=16, m=4, prompts=2, gain=2.0)
    assert be["break_even_gain"] == pytest.approx(35 / 23)
    assert be["pays"] and be["speedup"] == pytest.approx(2 * 23 / 35)
    # largest n that still pays at gain 2: 2 + 0.5 * 2 n + 17 = 46 -> n = 27
    assert be["n_max"] == pytest.approx(27.0)
    t = _model().step_seconds(n=27, m=4, prompts=2)
    assert t["pods"] / t["grpo"] == pytest.approx(2.0)  # exactly at break-even
    assert not C.break_even(12.0, 10.0, gain=1.1)["pays"]
    assert C.break_even(12.0, 10.0, gain=1.3)["pays"]
    with pytest.raises(ValueError):
        C.break_even(0.0, 1.0)


def test_paper_l40s_figures():
    p = C.paper_l40s(gain=2.0)
    assert p["break_even_gain"] == pytest.approx(10.1 / 7.5)
    assert p["speedup"] == pytest.approx(2 * 7.5 / 10.1) and p["pays"]
    assert C.implied_gain(2.0, 10.1, 7.5) == pytest.approx(2 * 10.1 / 7.5)
    assert not C.paper_l40s(gain=1.2)["pays"]


def test_l40s_lines_are_the_fit_to_the_released_runs():
    """The stored L40S lines, re-fitted from the shipped CSV of the authors' runs (the eight
    max-variance GSM8K settings, 1 prompt per step); and a fixed term moves n_max and the step."""
    from minipods.analysis import paper_runs as P

    sps = P.seconds_per_step(P.paper_study())
    fit = P.fit_step_cost({k: v for k, v in sps.items()
                           if P.setting(k)["task"] == "GSM8K" and P.setting(k)["rule"] == "max_variance"})
    f = C.L40S_FIT
    assert (f["fixed_s"], f["rollout_s"], f["update_s"]) == pytest.approx((fit["c"], fit["b_n"], fit["b_m"]), rel=1e-3)
    assert (f["r2"], f["runs"]) == (pytest.approx(fit["r2"], abs=1e-3), fit["runs"])
    cm = C.paper_l40s_model()
    assert cm.step_seconds(64, 16)["pods"] == pytest.approx(fit["fitted"]["GSM8K-512-64-16"], rel=1e-3)
    fixed = C.CostModel(C.Line(2.0, 0.5), C.Line(1.0, 2.0), fixed=3.0)
    assert fixed.step_seconds(n=16, m=4, prompts=2)["pods"] == pytest.approx(35.0 + 3.0)
    # gain 2 against GRPO's 26 s: 3 + 2 + 0.5 * 2 n + 17 = 52 -> n = 30
    assert fixed.break_even(n=16, m=4, prompts=2, gain=2.0)["n_max"] == pytest.approx(30.0)


def test_costmodel_part_on_the_tiny_model():
    model, tok = tiny_policy(seed=0)
    cfg = BenchConfig(n=4, max_new_tokens=6, m_values=[2, 4], repeats=1, quick=True, threads=1)
    out = run_bench(cfg, ["costmodel"], model=model, tokenizer=tok, log=lambda s: None)
    r = out["parts"]["costmodel"]
    assert [g["sequences"] for g in r["rollout_points"]] == [1, 2, 4]
    assert [u["sequences"] for u in r["update_points"]] == [2, 4]
    assert all(p["seconds"] > 0 for p in r["rollout_points"] + r["update_points"])
    assert (r["n"], r["m"]) == (4, 1)
    s = r["step"]  # the step times follow from the fitted lines
    rf, uf = r["rollout_fit"], r["update_fit"]
    assert s["pods"] == pytest.approx(rf["a"] + 4 * rf["b"] + uf["a"] + 1 * uf["b"])
    assert r["here"]["break_even_gain"] == pytest.approx(s["pods"] / s["grpo"])
    assert r["paper"]["break_even_gain"] == pytest.approx(10.1 / 7.5)
    assert math.isfinite(rf["r2"]) and math.isfinite(uf["r2"])
    assert {line.split("|")[1].strip() for line in out["table"].splitlines()[2:]} == {"costmodel"}


def test_costmodel_part_is_registered_and_validated(capsys):
    assert "costmodel" in bench.PARTS
    assert bench.main(["--parts", "costmodel", "--m-values", "32", "--n", "16"]) == 2
    assert "costmodel part needs >= 2 --m-values" in capsys.readouterr().err


def test_n_max_is_infinite_when_rollouts_cost_nothing_measurable():
    """A fitted rollout slope <= 0 (timing noise at tiny sizes) means extra rollouts never stop paying."""
    cm = C.CostModel(C.Line(a=5.0, b=-0.01, r2=0.1), C.Line(a=1.0, b=0.5, r2=1.0))
    be = cm.break_even(n=16, m=4, prompts=2, gain=2.0)
    assert be["n_max"] == float("inf") and be["pays"]
