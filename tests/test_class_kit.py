"""The class kit (issue 59, part 4): scripts/class_kit.py builds slides for every row of docs/teaching.md's
90-minute plan, a handout quoting the committed studies, and a rubric; the plan's discussion answers cite only
sections the class reads; the glossary holds every term the notebooks define in bold or use on a card."""
import importlib.util
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("class_kit", ROOT / "scripts" / "class_kit.py")
K = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(K)
TEACHING = (ROOT / "docs" / "teaching.md").read_text()


def test_the_kit_builds_from_one_command(tmp_path, capsys):
    assert K.main([str(tmp_path / "kit")]) == 0
    slides = (tmp_path / "kit" / "slides.md").read_text()
    rows = K.plan_rows()
    assert len(rows) >= 6 and sum(int(r["minutes"].split("-")[1]) - int(r["minutes"].split("-")[0]) for r in rows) == 90
    for row in rows:  # every slot has its slide, and every section it reads has one, titled as the notebook is
        assert f"# {row['minutes']} min · {row['topic']}" in slides, row
        for nb, sec in K.sections(row["read"]):
            assert f"## {nb} §{sec}. {K.notebook(nb)['sections'][sec]['title']}" in slides
        for ex_id in K.exercise_ids(row["exercises"]):
            assert f"**{ex_id}**" in slides
    for nb in ("01", "03", "05"):
        assert K.notebook(nb)["card"] and K.notebook(nb)["card"][0] in slides  # the cards, as written at build time
    figures = sorted((tmp_path / "kit" / "figures").glob("*.png"))
    assert len(figures) >= 3 and all(f.read_bytes()[:4] == b"\x89PNG" for f in figures)
    assert all(f"(figures/{f.name})" in slides for f in figures)


def test_the_handout_quotes_the_committed_summaries(tmp_path):
    K.main([str(tmp_path)])
    handout = (tmp_path / "handout.md").read_text()
    summary = (ROOT / "studies" / "class12" / "summary.md").read_text()
    primary = next(ln[2:] for ln in summary.splitlines() if "(primary)" in ln)
    assert primary in handout and "+1.0 points [−5.1, +7.1]" in handout  # the class study's primary, as stated
    assert next(ln for ln in (ROOT / "README.md").read_text().splitlines() if ln.startswith("| the paper's claim")) in handout
    assert "max-variance lemma" in handout and "k lowest plus the m − k highest" in handout
    assert len(handout.splitlines()) < 70  # one page
    rubric = (tmp_path / "rubric.md").read_text()
    assert all(f"| {ex_id} |" in rubric for ex_id in K.exercises()) and "## Homework" in rubric


def test_bad_output_path_exits_2(tmp_path, capsys):
    (tmp_path / "f").write_text("x")
    assert K.main([str(tmp_path / "f")]) == 2 and K.main([]) == 2
    assert not list(tmp_path.glob("f/*"))


def test_discussion_answers_cite_sections_the_class_reads():
    read = {s for row in K.plan_rows() for s in K.sections(row["read"])}
    block = TEACHING.split("Discussion questions", 1)[1].split("Two more for a self-study group", 1)[0]
    cited = []
    for nb, specs in re.findall(r"\b(\d\d) (§[\w\-]+(?:, §[\w\-]+)*)", block):
        cited += K.sections(f"{nb} {specs}")
    assert len(cited) >= 5 and set(cited) <= read, set(cited) - read


def test_self_study_assigns_no_exercise_before_its_section():
    exs = K.exercises()
    for line in TEACHING.split("## Two weeks of self-study", 1)[1].split("\n## ", 1)[0].splitlines():
        cols = [c.strip() for c in line.strip("|").split("|")]
        if len(cols) == 3 and re.match(r"\d", cols[0]):
            done = set(K.sections(re.sub(r"[^§0-9,\- ]|\[.*", "", cols[1]).strip().replace("§0-", "§0-")))
            for ex_id in K.exercise_ids(cols[2]):
                sec = exs[ex_id].section.split(".")[0]
                assert (exs[ex_id].notebook, sec) in done or f"{exs[ex_id].notebook} §" not in cols[1], (cols, ex_id)


# terms the notebooks define in bold or use on a card (each is checked to occur in the notebooks, so the list stays true)
TERMS = ["KV cache", "prefill", "decode step", "fast engine", "arm", "preset", "pass rate", "k3", "gradient checkpointing",
         "NF4", "primary statistic", "LoRA", "twin", "rollout", "temperature", "roofline", "memory-bound",
         "verifiable reward", "advantage", "silent", "exchange lemma", "clipping", "micro-batch", "break-even gain",
         "censored", "seed-level interval", "sign-flip", "time-averaged accuracy", "post hoc"]


def test_the_glossary_has_every_term_the_notebooks_use():
    notebooks = " ".join(p.read_text() for p in sorted((ROOT / "notebooks").glob("0*.py"))).lower()
    glossary = TEACHING.split("## Glossary", 1)[1].lower()
    terms = glossary.split("|---|---|---|", 1)[1]
    named = {row.split("|")[1].strip() for row in terms.strip().splitlines() if row.startswith("|")}
    assert all(t.lower() in notebooks for t in TERMS), [t for t in TERMS if t.lower() not in notebooks]
    missing = [t for t in TERMS + ["power", "LoRA alpha"] if not any(t.lower() in n for n in named)]
    assert not missing, missing
    cards = [b for nb in ("01", "02", "03", "04", "05", "06") for b in K.notebook(nb)["card"]]
    bold = {m.lower() for b in cards for m in re.findall(r"\*\*([^*]{3,30})\*\*", b)}
    assert not [t for t in bold if not any(t in n or n in t for n in named)], bold
