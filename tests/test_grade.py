"""The grader (notebooks/grade.py, `python notebooks/exercises.py --grade ...`) on planted submissions built from
the student edition: all right, all stubs, a plausible mistake in every implement-exercise, a hanging answer, a
raising cell and a raising function, an answer copied from the public seed's inputs, a malformed file and a foreign
notebook. One grading run (one command, as a teacher types it), its CSV rows checked value by value, in under a
minute."""

import csv
import inspect
import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from test_exercises import PLANTED
from test_release import E, NB, R

HEADER = "import math, re, itertools\nimport numpy as np\nimport torch\nimport exercises as E\n"
TIMEOUT_S = 10  # the default: the slowest check here (06.3) takes 0.8 s on an idle Zen 1, over 2 s on a busy one


def plant(nb: dict, answers: dict[str, str]) -> dict:
    """The notebook with code inserted before each exercise's `check(...)` line (a student's answer)."""
    sizes = {ex.id: len(ex.cells) for ex in E.EXERCISES.values()}
    for ex_id, idx in R.exercise_blocks(nb["cells"], sizes).items():
        if ex_id in answers:
            cell = nb["cells"][idx[-1]]
            src = R.text(cell)
            at = src.index(f'check("{ex_id}"')
            cell["source"] = src[:at] + answers[ex_id] + "\n" + src[at:]
    return nb


def right(ex) -> str:
    return f"import exercises as E\n{ex.name} = E.solution_module('{ex.notebook}').SOLUTIONS['{ex.id}']"


def wrong(ex) -> str:
    fn = next(a for i, a, _ in PLANTED if i == ex.id and callable(a))
    return HEADER + inspect.getsource(fn) + f"{ex.name} = {fn.__name__}"


def copied_01_1() -> str:
    """01.1 answered by a table of the public inputs (seed 0) and their outputs, as copied from a classmate's run."""
    seen, seed = {}, E.GRADING_SEED
    sol = E.solution_module("01").SOLUTIONS["01.1"]
    E.GRADING_SEED = 0
    try:
        E._verdict("01.1", lambda mask: seen.setdefault(repr(mask.tolist()), sol(mask).tolist()) and sol(mask))
    finally:
        E.GRADING_SEED = seed
    return (f"import torch\nTABLE = {seen!r}\ndef positions(mask):\n"
            "    return torch.tensor(TABLE.get(repr(mask.tolist()), torch.zeros_like(mask).tolist()))")


HANG = "def _hang(r, m):\n    while True:\n        pass\nmax_variance_subset = _hang"
BOOM = "raise ValueError('my cell is broken')"
FN_RAISES = "def fmt_reward(text):\n    return {}['x']"


pytestmark = pytest.mark.slow  # one grading run: a server process and a child per student (about 25 s)


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    base = tmp_path_factory.mktemp("edition")
    R.release(base, E)
    nbs = {p.name[:2]: p for p in (base / "notebooks").glob("*.ipynb")}
    cls = tmp_path_factory.mktemp("class")
    exs = list(E.EXERCISES.values())
    plans = {"ann": {ex.id: right(ex) for ex in exs}, "ben": {},
             "cat": {ex.id: wrong(ex) for ex in exs if ex.kind == "implement"}}
    for student, answers in plans.items():  # a folder of six notebooks each
        (cls / student).mkdir()
        for nb, path in nbs.items():
            (cls / student / path.name).write_text(json.dumps(plant(json.loads(path.read_text()), answers)))
    ok03 = {ex.id: right(ex) for ex in exs if ex.notebook == "03"}
    (cls / "dan.ipynb").write_text(json.dumps(plant(json.loads(nbs["03"].read_text()), {**ok03, "03.2": HANG})))
    eve = plant(json.loads(nbs["02"].read_text()), {"02.1": BOOM, "02.2": FN_RAISES})
    for cell in eve["cells"]:  # and deleted the line check("02.5", ...)
        cell["source"] = "\n".join(ln for ln in R.text(cell).splitlines() if not ln.startswith('check("02.5"'))
    (cls / "eve.ipynb").write_text(json.dumps(eve))
    (cls / "hal.ipynb").write_text(json.dumps(plant(json.loads(nbs["01"].read_text()), {"01.1": copied_01_1()})))
    (cls / "fay.ipynb").write_text('{"cells": [')  # cut short
    (cls / "gus.ipynb").write_text(json.dumps({"cells": [{"cell_type": "code", "source": "print(1)", "metadata": {},
                                                          "outputs": []}], "metadata": {}, "nbformat": 4}))
    out = cls.parent / "grades.csv"
    t0 = time.perf_counter()
    run = subprocess.run([sys.executable, str(NB / "exercises.py"), "--grade", *sorted(map(str, cls.iterdir())),
                          "--out", str(out), "--seed", "7", "--timeout", str(TIMEOUT_S)],
                         capture_output=True, text=True, timeout=300)
    seconds = time.perf_counter() - t0
    assert run.returncode == 0, run.stderr
    rows = list(csv.DictReader(out.open()))
    return {(r["student"], r["exercise"]): r for r in rows}, run.stdout, seconds


def test_grading_a_class_takes_under_a_minute(graded):
    ann = sum(float(r["seconds"]) for (s, _), r in graded[0].items() if s == "ann")
    print(f"grading the planted class (3 students x 27 exercises, 3 single notebooks, 2 bad files): {graded[2]:.1f} s; "
          f"the 27 right answers' cells and checks: {ann:.1f} s")
    assert graded[2] < 60, f"grading took {graded[2]:.0f} s"


def test_all_right_passes_and_all_stubs_are_unanswered(graded):
    rows = graded[0]
    for ex in E.EXERCISES.values():
        assert rows["ann", ex.id]["result"] == "pass", rows["ann", ex.id]
        assert rows["ben", ex.id]["result"] == "not answered", rows["ben", ex.id]
        assert rows["ann", ex.id]["seed"] == "7" and rows["ann", ex.id]["notebook"].startswith(ex.notebook)


def test_each_implement_mistake_fails_with_its_hint(graded):
    rows = graded[0]
    for ex in E.EXERCISES.values():
        r = rows["cat", ex.id]
        if ex.kind == "implement":
            word = next(w for i, a, w in PLANTED if i == ex.id and callable(a))
            assert r["result"] == "fail" and word in r["detail"], r
        else:
            assert r["result"] == "not answered", r


def test_a_hang_times_out_and_the_next_check_still_runs(graded):
    rows = graded[0]
    assert rows["dan", "03.2"]["result"] == "fail" and f"timed out after {TIMEOUT_S} s" in rows["dan", "03.2"]["detail"]
    assert [rows["dan", i]["result"] for i in ("03.1", "03.3", "03.4", "03.5")] == ["pass"] * 4
    assert not any(s == "dan" and i[:2] != "03" for s, i in rows)  # one notebook handed in: its exercises only


def test_answers_copied_from_the_public_seed_fail_under_the_teachers(graded, monkeypatch):
    ns = {}
    exec(copied_01_1(), ns)  # noqa: S102 (the planted answer passes where it was copied from, seed 0...)
    monkeypatch.setattr(E, "GRADING_SEED", 0)
    assert E._verdict("01.1", ns["positions"])[0] is True
    r = graded[0]["hal", "01.1"]  # ...and fails under the grader's --seed 7
    assert r["result"] == "fail" and "your real tokens get" in r["detail"], r


def test_raising_cells_are_errors_and_raising_functions_fail(graded):
    rows = graded[0]
    assert rows["eve", "02.1"]["result"] == "error" and "ValueError: my cell is broken" in rows["eve", "02.1"]["detail"]
    assert rows["eve", "02.2"]["result"] == "fail" and "raised KeyError" in rows["eve", "02.2"]["detail"]
    assert rows["eve", "02.4"]["result"] == "not answered"
    assert rows["eve", "02.5"]["result"] == "not answered" and "not in the notebook" in rows["eve", "02.5"]["detail"]
    assert rows["eve", "02.5"]["notebook"] == "eve.ipynb"


def test_malformed_and_foreign_notebooks_are_one_line_each(graded):
    rows, stdout = graded[0], graded[1]
    assert rows["fay", ""]["result"] == "error" and "not a notebook" in rows["fay", ""]["detail"]
    assert rows["gus", ""]["result"] == "error" and "no exercise cells" in rows["gus", ""]["detail"]
    assert [s for s, _ in rows].count("fay") == 1 and [s for s, _ in rows].count("gus") == 1
    lines = [ln for ln in stdout.splitlines() if ln.startswith("not graded: ")]
    assert len(lines) == 2 and "fay.ipynb" in lines[0] and "gus.ipynb" in lines[1]


def test_the_summary_tells_what_to_reteach(graded):
    stdout = graded[1]
    lines = {ln.split()[0]: ln for ln in stdout.splitlines() if ln[:2].isdigit()}
    assert len(lines) == len(E.EXERCISES) and len(stdout.splitlines()) <= 40
    assert lines["03.2"].split()[2:6] == ["1/4", "2", "1", "0"]  # ann; cat and dan fail; ben not answered
    assert "1x" in lines["03.2"] and lines["01.1"].split()[2] == "1/4"  # ann passes; ben, cat and hal do not
    assert "pads too" in lines["01.1"]
