"""The student edition of the notebooks (issue 59): `python notebooks/exercises.py --release OUT` (`make release`).

OUT/notebooks/ gets the six notebooks as a class receives them, with exercises.py and lessons.py beside them
(the cells import both) and no solutions/. Code cells are the committed ones, unchanged (tests/test_release.py
checks it, so tests/test_notebooks.py's small-mode runs of the sources cover the edition). Outputs that would
give an answer away are cleared: for each *predict* exercise, those of its cells, from the stub through the
cell that prints the package's value, with a note before the cleared run saying what it prints (digits hidden).
The committed notebooks stay the reader's edition, with every output.
"""

from __future__ import annotations

import copy
import json
import re
import shutil
import sys
from pathlib import Path

NB = Path(__file__).resolve().parent
IMPORT = "from exercises import check"
CHECK_LINE = re.compile(r"^[ \t]*check\(\s*[\"'](\d\d\.\d+)[\"']\s*,\s*([^\n]*?)\)[ \t]*(?:#[^\n]*)?$", re.M)
NOTE = "edition-note"  # the cell metadata key that marks the notes this module inserts


def text(cell) -> str:
    s = cell.get("source", "")
    return "".join(s) if isinstance(s, list) else str(s)


def exercise_blocks(cells, sizes: dict[str, int]) -> dict[str, list[int]]:
    """Exercise id -> the indices (into `cells`, nbformat dicts) of its code cells: the cell that calls
    `check("ID", ...)`, back to the code cell that imports check (exercises.cells() puts it first), or, if a
    student removed that line, the exercise's own number of cells (`sizes`). Ids not in `sizes` are skipped."""
    code = [i for i, c in enumerate(cells) if c.get("cell_type") == "code"]
    out: dict[str, list[int]] = {}
    for pos, i in enumerate(code):
        for m in CHECK_LINE.finditer(text(cells[i])):
            ex_id = m.group(1)
            if ex_id not in sizes or ex_id in out:
                continue
            start = next((j for j in range(pos, max(-1, pos - sizes[ex_id] - 4), -1) if IMPORT in text(cells[code[j]])
                          and (j == pos or not CHECK_LINE.search(text(cells[code[j]])))), max(0, pos - sizes[ex_id] + 1))
            out[ex_id] = code[start:pos + 1]
    return out


def _printed(cell) -> str:
    """What a cleared cell printed, for the note: its text lines without the check's verdict, digits as #."""
    lines = []
    for o in cell.get("outputs", []):
        t = o.get("text") if o.get("output_type") == "stream" else o.get("data", {}).get("text/plain")
        t = "".join(t) if isinstance(t, list) else (t or "")
        if "image/png" in o.get("data", {}):
            t = "(a figure)"
        lines += [ln for ln in t.splitlines() if ln.strip() and ln[:1] not in "·✓✗" and ln not in ("False", "True")]
    return "\n".join(re.sub(r"\d+(?:[.,]\d+)*(?:e[-+]?\d+)?", "#", ln) for ln in lines[:8])


def student_notebook(nb: dict, exercises) -> dict:
    """The student edition of one notebook (nbformat 4 dict): predict exercises' outputs cleared, a note each."""
    nb = copy.deepcopy(nb)
    cells = nb["cells"]
    sizes = {ex.id: len(ex.cells) for ex in exercises.EXERCISES.values()}
    blocks = exercise_blocks(cells, sizes)
    for ex_id in sorted(blocks, key=lambda e: -blocks[e][0]):  # from the end, so inserted notes keep indices valid
        if exercises.EXERCISES[ex_id].kind != "predict":
            continue
        shown = "\n".join(p for p in (_printed(cells[i]) for i in blocks[ex_id]) if p)
        for i in blocks[ex_id]:
            cells[i]["outputs"], cells[i]["execution_count"] = [], None
        alone = len(blocks[ex_id]) == 1  # stub and run in one cell: the note goes before it
        note = (f"*Student edition:* the outputs of exercise {ex_id}'s cells are cleared so that they do not give the "
                "answer away. Write your prediction in " + ("the next cell, then run it" if alone else
                                                            "the cell above, then run the next cell") + ": it prints"
                + (f" (digits shown as #)\n\n```\n{shown}\n```\n\nand" if shown else "") + " the check's line "
                "(✓ right, ✗ not yet with a hint, · not answered yet).")
        cells.insert(blocks[ex_id][0] + (0 if alone else 1), {"cell_type": "markdown", "id": f"edition-{ex_id.replace('.', '-')}",
                                            "metadata": {NOTE: True}, "source": note})
    return nb


def release(out: Path, exercises) -> list[Path]:
    """Write the student edition under out/notebooks/: the files written."""
    dest = out / "notebooks"
    dest.mkdir(parents=True, exist_ok=True)
    written = []
    for path in sorted(NB.glob("[0-9][0-9]_*.ipynb")):
        nb = student_notebook(json.loads(path.read_text(encoding="utf-8")), exercises)
        (dest / path.name).write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        written.append(dest / path.name)
    for name in ("exercises.py", "lessons.py"):
        shutil.copyfile(NB / name, dest / name)
        written.append(dest / name)
    return written


def main(args, exercises) -> int:
    """`--release OUT`: OUT must not hold a notebooks/ folder already (nothing is overwritten)."""
    if len(args) != 1 or args[0].startswith("-"):
        print("notebooks/exercises.py: error: --release takes one argument, the output folder", file=sys.stderr)
        return 2
    out = Path(args[0])
    if (out / "notebooks").exists() or out.is_file():
        print(f"notebooks/exercises.py: error: {out / 'notebooks' if out.is_dir() else out} exists: "
              "give a new folder", file=sys.stderr)
        return 2
    written = release(out, exercises)
    print(f"student edition: {len(written)} files in {out / 'notebooks'} (no solutions/; predict exercises' outputs "
          "cleared). Students install the package alone (pip install git+<the repository>) and open these notebooks.")
    return 0
