"""A class's hand-ins are graded homework: `compare --merge` re-derives what it pools and refuses, in one
line and writing nothing, each forgery of issue 60, planted in copies of two committed class hand-ins."""
import json
import math
import shutil
from pathlib import Path

import pytest

from minipods.analysis import compare

HAND_INS = Path(__file__).resolve().parent.parent / "studies" / "class12-hand-ins"
PODS = "pods_max_variance"


def _rows(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text().splitlines()]


def _write(path: Path, rows) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def _edit_rows(path: Path, fn) -> None:
    _write(path, [fn(r) for r in _rows(path)])


def _json(path: Path, **kw) -> None:
    path.write_text(json.dumps({**json.loads(path.read_text()), **kw}))


def _last_eval(d: Path) -> Path:
    return sorted((d / "eval").glob("step_*.jsonl"))[-1]


def _final(d: Path, fn) -> None:  # the last row holds the final evaluation
    rows = _rows(d / "metrics.jsonl")
    rows[-1]["eval_accuracy"] = fn(rows[-1]["eval_accuracy"])
    _write(d / "metrics.jsonl", rows)


def _relabel(d: Path, seed: int) -> None:  # what a student does to hand in a copy as another seed
    for a in ("grpo", PODS):
        _json(d / a / "config.json", seed=seed)
    meta = json.loads((d / "comparison.json").read_text())
    _json(d / "comparison.json", overrides={**meta["overrides"], "seed": seed})


def _stop_at(d: Path, seconds: float) -> None:  # an arm cut at `seconds` of training, its DONE edited to match
    rows = [r for r in _rows(d / "metrics.jsonl") if r["elapsed_s"] <= seconds]
    _write(d / "metrics.jsonl", rows)
    for f in (d / "eval").glob("step_*.jsonl"):
        if int(f.stem[5:]) > rows[-1]["step"]:
            f.unlink()
    _json(d / "DONE", step=rows[-1]["step"], elapsed_s=rows[-1]["elapsed_s"])


def _halve_time(d: Path) -> None:
    _edit_rows(d / "metrics.jsonl", lambda r: {**r, "elapsed_s": r["elapsed_s"] / 2})
    _json(d / "DONE", elapsed_s=json.loads((d / "DONE").read_text())["elapsed_s"] / 2)


FORGERIES = {  # what is done to the copy of class-1 (seed 1) -> the check its one-line refusal names
    "eval_accuracy raised 30 points": (lambda h: _final(h / PODS, lambda x: x + 0.3), "differs from eval/step_"),
    "accuracy 1.7": (lambda h: _final(h / PODS, lambda x: 1.7),
                     "eval_accuracy is 1.7, not a finite value in range"),
    "NaN accuracy": (lambda h: _final(h / "grpo", lambda x: math.nan), "eval_accuracy is nan, not a finite value"),
    "a question re-graded": (lambda h: _edit_rows(_last_eval(h / PODS), lambda q: {**q, "correct": 1}),
                             "marks an answer correct that the grader does not"),
    "per-question file deleted": (lambda h: _last_eval(h / PODS).unlink(), "no per-question file for the step-"),
    "other eval questions": (lambda h: [_edit_rows(f, lambda q: {**q, "index": q["index"] + 64})
                                        for f in (h / PODS / "eval").glob("*.jsonl")], "evaluated on different questions"),
    "elapsed_s halved": (lambda h: _halve_time(h / "grpo"), "elapsed_s is not the sum of its step_s"),
    "stopped at 300 of 600 s": (lambda h: _stop_at(h / PODS, 300), "short of the design's 600.0 s"),
    "DONE edited": (lambda h: _json(h / "grpo" / "DONE", elapsed_s=650.0), "DONE differs from metrics.jsonl"),
    "preset edited": (lambda h: _json(h / "comparison.json", preset="laptop"), "comparison.json's preset differs"),
    "primary edited": (lambda h: _json(h / "comparison.json", primary="final"), "comparison.json's primary differs"),
    "a copy relabelled": (lambda h: (shutil.rmtree(h), shutil.copytree(HAND_INS / "class-0", h), _relabel(h, 1)),
                          "is a copy of"),
    "a pilot seed": (lambda h: _relabel(h, 100), "seed 100 is a pilot seed"),
}


@pytest.fixture()
def class_pair(tmp_path):
    for s in (0, 1):
        shutil.copytree(HAND_INS / f"class-{s}", tmp_path / f"class-{s}")
    return tmp_path


def _merge(dirs, out, capsys):
    rc = compare.main(["--merge", *map(str, dirs), "--output-dir", str(out)])
    return rc, capsys.readouterr()


@pytest.mark.parametrize("case", [*FORGERIES, "output inside a hand-in"])
def test_each_forgery_is_refused_in_one_line_naming_the_folder_and_nothing_is_written(case, class_pair, capsys):
    forged, out = class_pair / "class-1", class_pair / "study"
    if case in FORGERIES:
        FORGERIES[case][0](forged)
        want = FORGERIES[case][1]
    else:
        out, want = forged / "study", "is inside the input"
    rc, (_, err) = _merge([class_pair / "class-0", forged], out, capsys)
    assert rc == 2 and err.count("\n") == 1 and want in err and str(forged) in err, err
    assert not out.exists() and not [p for p in class_pair.rglob(".study*")]


@pytest.mark.docs
def test_the_committed_class_study_is_its_hand_ins_merged_again(tmp_path, capsys):
    """studies/class12 holds what the merge wrote, read from studies/class12-hand-ins: merged again, byte for byte."""
    study = HAND_INS.parent / "class12"
    meta = json.loads((study / "comparison.json").read_text())
    assert [(study / h["folder"]).resolve() for h in meta["hand_ins"]] == [HAND_INS / f"class-{s}" for s in range(12)]
    rc, (_, err) = _merge([HAND_INS / f"class-{s}" for s in range(12)], tmp_path / "again", capsys)
    assert rc == 0, err
    for name in ("summary.md", "summary.csv"):
        assert (tmp_path / "again" / name).read_bytes() == (study / name).read_bytes(), name
    assert sorted(p.name for p in (tmp_path / "again").iterdir()) == [  # the runs stay in the hand-ins, nothing else is
        "accuracy_vs_time.png", "comparison.json", "summary.csv", "summary.md"]  # copied (extra files neither)
    again = json.loads((tmp_path / "again" / "comparison.json").read_text())
    assert [h["content"] for h in again["hand_ins"]] == [h["content"] for h in meta["hand_ins"]]
    assert len({h["content"] for h in meta["hand_ins"]}) == 12 and (again["preset"], again["primary"]) == ("class", "time_averaged")
