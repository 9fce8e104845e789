"""The student edition (notebooks/release.py, `python notebooks/exercises.py --release OUT`): no solutions, no
printed predict answer, and code cells equal to the notebooks' sources, so tests/test_notebooks.py's small-mode
runs of the sources are runs of the edition (nothing of it is executed twice)."""

import contextlib
import importlib.util
import io
import json
import re
import sys
from pathlib import Path

import pytest

NB = Path(__file__).resolve().parent.parent / "notebooks"
if "exercises" not in sys.modules:  # as a notebook imports it (tests/test_exercises.py does the same)
    _spec = importlib.util.spec_from_file_location("exercises", NB / "exercises.py")
    sys.modules["exercises"] = importlib.util.module_from_spec(_spec)
    _spec.loader.exec_module(sys.modules["exercises"])
E = sys.modules["exercises"]
_spec = importlib.util.spec_from_file_location("exercises_release", NB / "release.py")
R = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(R)
PREDICT = [ex for ex in E.EXERCISES.values() if ex.kind == "predict"]


def predict_value(ex_id: str) -> float:
    """The package's value a predict exercise is checked against (what its judge hands to _predict)."""
    seen, orig = [], E._predict
    E._predict = lambda answer, truth, *a, **k: (seen.append(float(truth)), orig(answer, truth, *a, **k))[1]
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            E._verdict(ex_id, 0.0)
    finally:
        E._predict = orig
    assert seen, f"{ex_id}: its judge no longer calls _predict: update predict_value"
    return seen[0]


def printed_forms(x: float) -> set[str]:
    """The ways a notebook prints x (0.7071: 0.71, 0.707, 0.7071, 71%, 70.7%, 7.07e-01, ...): roundings within 2%
    of x, of two significant digits or more; an integer only from 100 (a 3 or a 3.0 is in every output)."""
    forms = {f"{x:.{d}f}" for d in range(1, 5)} | {f"{x:.{d}e}" for d in (1, 2, 3)} | {f"{x:.{d}g}" for d in (2, 3, 4)}
    forms |= {f"{100 * x:.{d}f}%" for d in (0, 1)} | {f"{100 * x:.{d}f} %" for d in (0, 1)}
    value = lambda f: float(f.rstrip("% ")) / (100 if "%" in f else 1)  # noqa: E731
    if x == int(x):
        return {str(int(x))} if abs(x) >= 100 else set()  # B* = 105, yes; a count of 3, no
    return {f for f in forms if abs(value(f) - x) <= 0.02 * abs(x)
            and len(f.lstrip("-0.").split("e")[0].replace(".", "").rstrip("% ")) >= 2}


def shows(form: str, text: str) -> bool:
    """form printed as a number of its own in text (not the 2.5 of Qwen2.5, nor the 1.8 of 1.85)."""
    return re.search(r"(?<![\w.])" + re.escape(form) + r"(?![\d])", text) is not None


# where a predict answer's value is printed as another quantity, one that does not give the answer away
ELSEWHERE = {("06.1", "over 10 seeds (t 95% CI; sign-flip p 0.062)"):
             "notebook 06 section 4: a 10-seed comparison's p that happens to be 64/1024 = 2/2^5",
             ("05.2", "narrower than the seeds allow"):
             "notebook 05 section 2: how many times narrower the pooled interval is than the seed-level one"}


def outputs(cell) -> str:
    out = []
    for o in cell.get("outputs", []):
        for t in (o.get("text"), *o.get("data", {}).values()):
            if isinstance(t, (str, list)):
                out.append("".join(t) if isinstance(t, list) else t)
    return "\n".join(out)


@pytest.fixture(scope="module")
def edition(tmp_path_factory):
    out = tmp_path_factory.mktemp("edition")
    with contextlib.redirect_stdout(io.StringIO()):
        assert E.main(["--release", str(out)]) == 0
    return out / "notebooks"


def test_edition_holds_the_notebooks_their_helpers_and_no_solutions(edition):
    committed = sorted(p.name for p in NB.glob("[0-9][0-9]_*.ipynb"))
    assert sorted(p.name for p in edition.iterdir()) == sorted(committed + ["exercises.py", "lessons.py"])
    for name in ("exercises.py", "lessons.py"):
        assert (edition / name).read_bytes() == (NB / name).read_bytes()
    assert not list(edition.parent.rglob("solutions")) and not list(edition.parent.rglob("s0*.py"))


def test_edition_code_cells_are_the_sources(edition):
    """The code students run is the committed notebooks' (which tests/test_notebooks.py holds equal to their .py
    sources and runs in small mode); the markdown is theirs plus one note per predict exercise."""
    for path in sorted(edition.glob("*.ipynb")):
        ids = [c["id"] for c in json.loads(path.read_text(encoding="utf-8"))["cells"]]  # nbformat 4.5: unique cell ids
        assert len(set(ids)) == len(ids) and all(re.fullmatch(r"[a-zA-Z0-9_-]{1,64}", i) for i in ids), path.name
        src = json.loads((NB / path.name).read_text(encoding="utf-8"))["cells"]
        nb = json.loads(path.read_text(encoding="utf-8"))["cells"]
        assert [R.text(c) for c in nb if c["cell_type"] == "code"] == [R.text(c) for c in src if c["cell_type"] == "code"]
        md = [R.text(c) for c in nb if c["cell_type"] == "markdown" and not c["metadata"].get(R.NOTE)]
        assert md == [R.text(c) for c in src if c["cell_type"] == "markdown"], path.name
        notes = [c for c in nb if c["metadata"].get(R.NOTE)]
        assert len(notes) == sum(ex.notebook == path.name[:2] for ex in PREDICT), path.name


@pytest.mark.parametrize("ex", PREDICT, ids=lambda ex: ex.id)
def test_no_predict_answer_is_printed_in_the_edition(edition, ex):
    """The committed notebook prints the answer (this is what the edition removes); the edition prints it nowhere:
    the exercise's cells have no outputs and no output anywhere holds the value in a printed form."""
    name = next(p.name for p in NB.glob(f"{ex.notebook}_*.ipynb"))
    forms = printed_forms(predict_value(ex.id))
    nb = json.loads((edition / name).read_text(encoding="utf-8"))
    blocks = R.exercise_blocks(nb["cells"], {e.id: len(e.cells) for e in E.EXERCISES.values()})
    assert all(not nb["cells"][i].get("outputs") for i in blocks[ex.id]), f"{ex.id}: its cells keep outputs"
    allowed = [text for (i, text) in ELSEWHERE if i == ex.id]
    shown = [(i, f) for i, c in enumerate(nb["cells"]) for f in forms
             if shows(f, "\n".join(ln for ln in outputs(c).splitlines() if not any(a in ln for a in allowed)))]
    assert not shown, f"{ex.id}: the edition of {name} prints its answer: cell {shown[0][0]} holds {shown[0][1]!r}"
    note = next(R.text(c) for c in nb["cells"] if c["metadata"].get(R.NOTE) and ex.id in R.text(c))
    assert "then run" in note and not any(shows(f, note) for f in forms)


def test_the_committed_notebooks_print_the_answers():
    """The forms above do find the answers where they are printed: in the reader's edition, most predict cells."""
    found = 0
    for ex in PREDICT:
        nb = json.loads(next(NB.glob(f"{ex.notebook}_*.ipynb")).read_text(encoding="utf-8"))
        found += any(shows(f, outputs(c)) for c in nb["cells"] for f in printed_forms(predict_value(ex.id)))
    assert found >= len(PREDICT) // 2, found  # 5 of 8 print the value itself; 01.4, 03.1, 04.2 a table it reads off


def test_release_refuses_an_existing_edition(tmp_path, capsys):
    (tmp_path / "notebooks").mkdir()
    assert E.main(["--release", str(tmp_path)]) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and "exists" in err[0]
    assert list((tmp_path / "notebooks").iterdir()) == []
