"""The PODS authors' own runs (their released evaluation numbers, data/pods_paper_runs.csv) as a study.

    study = paper_study("gsm8k", ["GSM8K-512-16-16", "GSM8K-512-64-16"])   # run -> setting -> points
    base = base_accuracy("gsm8k")                                          # the untrained Qwen2.5-3B

A paper run is one seed of an arm (arm = setting, seed = run 1-10, seconds = hours x 3600), so the
seed-level statistics of minipods serve it unchanged. Each run starts with the base model's evaluation
(0 s, step 0) and is cut at the paper's 6 hours. Provenance and licence: data/README.md. No torch."""

from __future__ import annotations

import csv
import re
from pathlib import Path

import numpy as np

from minipods.analysis.summary import Point

Study = dict[int, dict[str, list[Point]]]  # run -> setting -> evaluations, as minipods.analysis.summary reads

CSV = Path(__file__).parent / "data" / "pods_paper_runs.csv"
N_QUESTIONS = {"gsm8k": 1319, "math500": 500, "amc23": 40}  # the test sets' sizes (data/README.md)
REPEATS = 5  # sampled answers per question in each evaluation: a Point's n counts graded answers
HOURS = 6.0  # each run's wall-clock budget in the paper
_CONFIG = re.compile(r"^(?P<task>GSM8K|MATH-NF|Llama)(?:-(?P<rule>Rand|MaxR))?-512-(?P<n>\d+)-(?P<m>\d+)(?:-[\d.]+)?$")
RULES = {None: "max_variance", "Rand": "random", "MaxR": "max_reward"}


def read_rows(path: str | Path = CSV) -> list[dict]:
    """The CSV's rows with numbers as numbers (answer_acc_repeats as a list of floats)."""
    with Path(path).open(newline="") as fh:
        rows = list(csv.DictReader(fh))
    for r in rows:
        r.update({k: int(r[k]) for k in ("run", "checkpoint", "step")},
                 **{k: float(r[k]) for k in ("hours", "answer_acc", "format_acc", "both_acc", "mean_length")},
                 answer_acc_repeats=[float(x) for x in r["answer_acc_repeats"].split(";")])
    return rows


def setting(name: str) -> dict:
    """'GSM8K-Rand-512-64-16' -> {task: GSM8K, rule: random, n: 64, m: 16}; base-* -> {task: base, ...}."""
    if name.startswith("base-"):
        return {"task": "base", "rule": None, "n": None, "m": None, "model": name[5:]}
    g = _CONFIG.match(name)
    if g is None:
        raise ValueError(f"not a setting of the paper's runs: {name!r}")
    return {"task": g["task"], "rule": RULES[g["rule"]], "n": int(g["n"]), "m": int(g["m"]),
            "model": "llama" if g["task"] == "Llama" else "qwen"}


def base_accuracy(benchmark: str = "gsm8k", model: str = "qwen", rows: list[dict] | None = None) -> float:
    """answer_acc of the untrained model (base-qwen or base-llama) on `benchmark`."""
    got = [r["answer_acc"] for r in rows or read_rows() if r["config"] == f"base-{model}" and r["benchmark"] == benchmark]
    if len(got) != 1:
        raise ValueError(f"no base-{model} row for {benchmark!r}")
    return got[0]


def paper_study(benchmark: str = "gsm8k", settings: list[str] | None = None, base: bool = True,
                max_hours: float = HOURS, rows: list[dict] | None = None) -> Study:
    """run -> setting -> its Points on `benchmark` in time order, cut at max_hours (settings None: every
    trained one). A Point's n is questions x REPEATS, the graded answers, so sqrt(t (1 - t) / n)
    bounds its noise (notebook 06 checks it against the repeats)."""
    rows = [r for r in rows or read_rows() if r["benchmark"] == benchmark]
    names = settings or list(dict.fromkeys(r["config"] for r in rows if not r["config"].startswith("base-")))
    out: Study = {}
    for name in names:
        s = setting(name)
        start = [Point(0.0, 0, base_accuracy(benchmark, s["model"], rows), N_QUESTIONS[benchmark] * REPEATS)] if base else []
        mine = sorted((r for r in rows if r["config"] == name and r["hours"] <= max_hours + 1e-9),
                      key=lambda r: (r["run"], r["hours"]))
        if not mine:
            raise ValueError(f"no rows of {name!r} on {benchmark!r}")
        for r in mine:
            out.setdefault(r["run"], {}).setdefault(name, list(start)).append(
                Point(r["hours"] * 3600, r["step"], r["answer_acc"], N_QUESTIONS[benchmark] * REPEATS))
    return out


def seconds_per_step(study: Study) -> dict[str, list[float]]:
    """setting -> each run's training seconds / steps at its last evaluation (the whole run's mean step)."""
    out: dict[str, list[float]] = {}
    for arms in study.values():
        for name, pts in arms.items():
            out.setdefault(name, []).append(pts[-1].seconds / pts[-1].step)
    return out


def fit_step_cost(per_run: dict[str, list[float]]) -> dict:
    """Least squares over runs: seconds per step = c + b_n n + b_m m (b_n: one more generated rollout,
    b_m: one more kept one). Returns c, b_n, b_m, r2, runs and fitted (setting -> the line's seconds)."""
    nm = {k: setting(k) for k in per_run}
    x = np.array([[1.0, nm[k]["n"], nm[k]["m"]] for k, ys in per_run.items() for _ in ys])
    y = np.array([v for ys in per_run.values() for v in ys])
    coef = np.linalg.lstsq(x, y, rcond=None)[0]
    r2 = 1 - float(((y - x @ coef) ** 2).sum() / ((y - y.mean()) ** 2).sum())
    c, b_n, b_m = (float(v) for v in coef)
    return {"c": c, "b_n": b_n, "b_m": b_m, "r2": r2, "runs": len(y),
            "fitted": {k: c + b_n * nm[k]["n"] + b_m * nm[k]["m"] for k in per_run}}


def by_hours(study: Study, hours: float) -> Study:
    """The study as it stood after `hours` of training (an arm's final evaluation: its accuracy then)."""
    return {r: {a: [p for p in pts if p.seconds <= hours * 3600 + 1e-6] for a, pts in arms.items()}
            for r, arms in study.items()}


def mean_curve(study: Study, arm: str) -> list[Point]:
    """The paper's reading: the arm's mean over runs at each evaluation every run has (n None)."""
    runs = [arms[arm] for arms in study.values() if arm in arms]
    k = len(runs)
    return [Point(sum(r[i].seconds for r in runs) / k, round(sum(r[i].step for r in runs) / k),
                  sum(r[i].accuracy for r in runs) / k, None) for i in range(min(map(len, runs)))]


def only(study: Study, arms: list[str]) -> Study:
    return {r: {a: by[a] for a in arms if a in by} for r, by in study.items()}
