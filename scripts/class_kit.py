"""The class kit (issue 59): slides for docs/teaching.md's 90-minute plan, a one-page handout of the paper and a
rubric, generated from the committed sources, never kept by hand.

    python scripts/class_kit.py OUT        # or: make kit OUT=folder

Writes OUT/slides.md (Markdown slides, `---` between slides: Marp, reveal-md or any Markdown viewer), OUT/figures/
(the PNGs the slides show, taken from the committed notebooks' outputs), OUT/handout.md and OUT/rubric.md.
The slides follow the plan's table row by row: each row's sections, as the notebooks title them at build time, with
the first figure each section prints, the notebook's card and the row's exercises. The handout quotes the notebooks'
cards, README's claims table and the studies' summary.md lines as committed. tests/test_class_kit.py builds it.
"""
from __future__ import annotations

import base64
import functools
import importlib.util
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NB = ROOT / "notebooks"
POINTS = {"implement": 2, "predict": 1, "observe": 1}


def exercises():
    spec = importlib.util.spec_from_file_location("exercises", NB / "exercises.py")
    sys.modules.setdefault("exercises", module := importlib.util.module_from_spec(spec))
    if sys.modules["exercises"] is module:
        spec.loader.exec_module(module)
    return sys.modules["exercises"].EXERCISES


def plan_rows() -> list[dict]:
    """docs/teaching.md's 90-minute table: minutes, topic, read, exercises."""
    text = (ROOT / "docs" / "teaching.md").read_text()
    table = text.split("## A 90-minute class", 1)[1].split("\n## ", 1)[0]
    rows = []
    for line in table.splitlines():
        cols = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("|") and re.match(r"\d+-\d+$", cols[0]):
            rows.append(dict(minutes=cols[0], topic=cols[1], read=cols[2], exercises=cols[3]))
    return rows


@functools.lru_cache(maxsize=None)
def notebook(nb: str) -> dict:
    """One notebook: its title, sections in order (id -> title, first figure) and card, from notebooks/NN_*.py as it
    stands (the source), the figures from the committed NN_*.ipynb's outputs (a section without one shows none)."""
    path = next(NB.glob(f"{nb}_*.py"))
    out = {"title": path.stem, "sections": {}, "card": []}
    text = [ln[2:] if ln.startswith("# ") else ln.lstrip("#") for ln in path.read_text().splitlines()]
    out["title"] = next((ln[2:].strip() for ln in text if ln.startswith("# ")), path.stem)
    for ln in text:
        if m := re.match(r"###? (\d\w*)\. (.+)$", ln):
            out["sections"][m.group(1)] = {"title": m.group(2).strip(), "figure": None}
    if "**On a card.**" in "\n".join(text):
        card = "\n".join(text).split("**On a card.**", 1)[1].split("# %%", 1)[0]
        out["card"] = [ln[2:].strip() for ln in card.splitlines() if ln.startswith("* ")]
    current = None
    for cell in json.loads(path.with_suffix(".ipynb").read_text())["cells"]:
        src = "".join(cell["source"])
        for o in cell.get("outputs", []) if not out["card"] else []:  # a card the notebook computes (05, 06)
            shown = "".join(o.get("data", {}).get("text/markdown", ""))
            if "**On a card**" in shown:
                out["card"] = [ln[2:].strip() for ln in shown.splitlines() if ln.startswith("* ")]
        if cell["cell_type"] == "markdown" and (m := re.search(r"^###? (\d\w*)\. ", src, re.M)):
            current = m.group(1) if m.group(1) in out["sections"] else None
        elif cell["cell_type"] == "code" and current and out["sections"][current]["figure"] is None:
            pngs = [o["data"]["image/png"] for o in cell.get("outputs", []) if "image/png" in o.get("data", {})]
            out["sections"][current]["figure"] = pngs[0] if pngs else None
    return out


def sections(read: str) -> list[tuple[str, str]]:
    """'03 §2-5, §7, §9' -> [('03', '2'), ..., ('03', '9')], ranges in the notebook's order (so 04 §1-2b holds 2)."""
    out, nb = [], None
    for part in re.split(r",\s*", read):
        if m := re.match(r"(\d\d)\s*(§.*)?$", part.strip()):
            nb, part = m.group(1), m.group(2) or ""
        spec = part.strip().lstrip("§")
        if not nb or not spec:
            continue
        ids = list(notebook(nb)["sections"])
        lo, _, hi = spec.partition("-")
        if lo in ids:
            out += [(nb, s) for s in ids[ids.index(lo):ids.index(hi) + 1 if hi in ids else ids.index(lo) + 1]]
    return out


def exercise_ids(text: str) -> list[str]:
    """'04.1-04.4, 05.2 (predict B*)' -> ['04.1', '04.2', '04.3', '04.4', '05.2']."""
    ids = list(exercises())
    out = []
    for m in re.finditer(r"(\d\d\.\d)(?:-(\d\d\.\d))?", text):
        lo, hi = m.group(1), m.group(2) or m.group(1)
        if lo in ids and hi in ids:
            out += ids[ids.index(lo):ids.index(hi) + 1]
    return out


def slides(out: Path) -> str:
    """The slides, one row of the plan after another; figures written under out/figures."""
    (out / "figures").mkdir(parents=True, exist_ok=True)
    exs = exercises()
    deck = ["# PODS in 90 minutes: down-sample the rollouts, keep the signal",
            "", "minipods class kit, generated by `python scripts/class_kit.py` from docs/teaching.md's plan, "
            "the notebooks' cards and figures."]
    for row in plan_rows():
        deck += ["", "---", "", f"# {row['minutes']} min · {row['topic']}", "",
                 f"Read: {row['read'] or '(nothing new)'} · exercises: {row['exercises']}"]
        shown = []
        for nb, sec in sections(row["read"]):
            s = notebook(nb)["sections"][sec]
            deck += ["", "---", "", f"## {nb} §{sec}. {s['title']}", "", f"*{row['minutes']} min · {row['topic']}*"]
            if s["figure"]:
                name = f"figures/{nb}_{sec}.png"
                (out / name).write_bytes(base64.b64decode(s["figure"]))
                deck += ["", f"![{nb} §{sec}]({name})"]
            shown += [nb] if nb not in shown else []
        for nb in shown:
            deck += ["", "---", "", f"## On a card: {notebook(nb)['title']}", ""] + [f"* {b}" for b in notebook(nb)["card"]]
        ids = exercise_ids(row["exercises"])
        if ids:
            deck += ["", "---", "", f"## Exercises ({row['minutes']} min)", ""]
            deck += [f"* **{i}** ({exs[i].kind}): {exs[i].title}; notebook {exs[i].notebook}, §{exs[i].section}" for i in ids]
        if "Discussion" in row["topic"]:
            disc = (ROOT / "docs" / "teaching.md").read_text().split("Discussion questions", 1)
            deck += ["", "---", "", "## Discussion", ""] + ([ln for ln in disc[1].split("\n## ", 1)[0].splitlines()
                                                              if ln.startswith(("- ", "* ", "1", "2", "3", "4", "5"))]
                                                             if len(disc) > 1 else [])
    return "\n".join(deck) + "\n"


def summary_line(study: str, label: str) -> str:
    """The line of studies/STUDY/summary.md whose statistic is labelled `label` (e.g. 'primary'), as committed."""
    for line in (ROOT / "studies" / study / "summary.md").read_text().splitlines():
        if line.startswith("- ") and f"({label})" in line:
            return line[2:]
    raise SystemExit(f"studies/{study}/summary.md has no ({label}) line")


def handout() -> str:
    """One page: the algorithm, the lemma, the claims and what the runs say, all quoted from committed sources."""
    readme = (ROOT / "README.md").read_text()
    claims = readme.split("## What the paper claims, and what the runs say", 1)[1].split("\n## ", 1)[0]
    table = [ln for ln in claims.splitlines() if ln.startswith("|")]
    mv = notebook("03")
    return "\n".join([
        "# PODS, on one page", "",
        "*Policy Optimization with Down-Sampling, as minipods reproduces it. Generated by "
        "`python scripts/class_kit.py`; numbers quoted from README.md and studies/*/summary.md.*", "",
        "## The algorithm", "",
        "For each prompt, sample n rollouts (inference: cheap in parallel), score them with a verifiable reward, keep "
        "m < n of them by a down-sampling rule, and run the GRPO update (the costly phase) on the kept rows only, "
        "with advantages standardised within the kept group.", "",
        *[f"* {b}" for b in notebook("01")["card"] + notebook("04")["card"]], "",
        "## The max-variance lemma", "",
        "Keeping the m rewards with the largest variance: some optimal subset is the k lowest plus the m − k highest "
        "for some k (an exchange argument), so sorting and scanning the m + 1 candidates finds it in O(n log n).", "",
        *[f"* {b}" for b in mv["card"]], "",
        "## The claims, and what the runs say (README.md)", "", *table, "",
        "## The studies' headline lines (summary.md, as committed)", "",
        f"* Class study, 12 seeds (studies/class12/summary.md): {summary_line('class12', 'primary')}",
        f"* Laptop study, 10 seeds (studies/laptop10/summary.md): {summary_line('laptop10', 'post hoc')}", ""])


def rubric() -> str:
    """Points per graded exercise (from exercises.py) and the homework's criteria."""
    exs = exercises()
    lines = ["# Rubric", "", "Generated by `python scripts/class_kit.py` from notebooks/exercises.py. Exercises are "
             "graded by `python notebooks/exercises.py --grade` (pass, fail with its hint, not answered, error); a pass "
             "earns the points, anything else none.", "",
             "| exercise | kind | title | points | a pass means |", "|---|---|---|---:|---|"]
    means = {"implement": "the function matches the package's on the check's random inputs (the teacher's seed)",
             "predict": "the number is within the stated tolerance (an answer equally right under the maths counts)",
             "observe": "the value read off the run is the one the cell prints"}
    lines += [f"| {e.id} | {e.kind} | {e.title} | {POINTS[e.kind]} | {means[e.kind]} |" for e in exs.values()]
    total = sum(POINTS[e.kind] for e in exs.values())
    lines += ["", f"Total: {total} points.", "", "## Homework", "",
              "| task | full marks | half marks | compute |", "|---|---|---|---|",
              "| a `--small` run with your seed | the `eval accuracy` line and the adapter's sha256 equal the teacher's "
              "rerun on the class machine | the run is handed in but differs (another CPU or thread count: grade on the "
              "class machine) | see docs/teaching.md, Graded homework |",
              "| PODS minus GRPO over seeds 0-4 (`compare --small`) | the seed-level mean and Student-t interval as "
              "`compare` prints them, and one sentence on what five seeds cannot resolve | the number without its "
              "interval, or a pooled interval | see docs/teaching.md, Graded homework |", ""]
    return "\n".join(lines)


def main(argv=None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1 or args[0].startswith("-"):
        print("scripts/class_kit.py: error: takes one argument, the output folder (python scripts/class_kit.py OUT)",
              file=sys.stderr)
        return 2
    out = Path(args[0])
    if out.exists() and not out.is_dir():
        print(f"scripts/class_kit.py: error: {out} exists and is not a folder", file=sys.stderr)
        return 2
    out.mkdir(parents=True, exist_ok=True)
    (out / "slides.md").write_text(slides(out))
    (out / "handout.md").write_text(handout())
    (out / "rubric.md").write_text(rubric())
    print(f"wrote {out}/slides.md, handout.md, rubric.md and figures/")
    return 0


if __name__ == "__main__":
    sys.exit(main())
