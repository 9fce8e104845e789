"""Regenerate the teaching notebooks from their sources and run them: `make notebooks` (or `NB=03`).

`notebooks/NN_name.py` (jupytext percent format) is the file you edit. For each one this script
1. updates the paired `notebooks/NN_name.ipynb` from it (`jupytext --to ipynb --update`: the cells come
   from the .py, the .ipynb keeps its cell ids and metadata, so the diff is the cells that changed);
2. executes it top to bottom in a fresh python3 kernel, in place, in FULL mode (the sizes meant for
   reading; `--small` runs the test suite's tiny sizes instead, to try the pipeline: don't commit those),
   its working directory a new empty temporary folder, deleted afterwards: every run a notebook writes
   starts from nothing, so no page can reuse ("finished earlier, skipped") a run left on this machine
   (the model cache, MINIPODS_CACHE, is kept: it holds downloaded weights, not results);
3. writes the card's times (full mode only): the line after "**Time here**" in the notebook's first cell
   (in the .py and the .ipynb alike) becomes this run's total, read from the page's last cell ("notebook
   ran in N s"), and each section that took a minute or more (from the cells' execution timestamps), so
   the card and the page agree by construction; never type that line by hand;
4. strips what would churn every diff or bloat the file: per-cell execution timestamps and widget state.
Progress bars are off (TQDM_DISABLE=1): in a kernel tqdm draws ipywidgets, which GitHub cannot render.

Set MINIPODS_GSM8K_DIR first (otherwise notebooks 01/02/04 fall back to synthetic problems) and
OMP_NUM_THREADS if the machine is shared (default: torch's choice, all physical cores).
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

import jupytext.cli
import nbformat
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parent.parent
NB_DIR = ROOT / "notebooks"
WIDGET_MIME = "application/vnd.jupyter.widget-view+json"


def sources(selected: list[str]) -> list[Path]:
    """The notebook sources whose name starts with one of `selected` (all of them when empty)."""
    paths = sorted(NB_DIR.glob("[0-9][0-9]_*.py"))
    if selected:
        paths = [p for p in paths if any(p.stem.startswith(s) for s in selected)]
    return paths


def section_seconds(nb) -> dict:
    """{section heading: seconds its code cells ran}, from the execution timestamps nbclient records (before
    strip_volatile drops them); a section starts at a markdown line "## ..."; cells before the first: "setup"."""
    out, section = {}, "setup"
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            heads = re.findall(r"(?m)^## (.+)$", cell.source)
            section = heads[-1].strip() if heads else section
            continue
        ex = cell.metadata.get("execution", {})
        t0, t1 = ex.get("iopub.execute_input"), ex.get("shell.execute_reply")
        if t0 and t1:
            dt = datetime.fromisoformat(t1.replace("Z", "+00:00")) - datetime.fromisoformat(t0.replace("Z", "+00:00"))
            out[section] = out.get(section, 0.0) + dt.total_seconds()
    return out


def clock(s: float) -> str:
    """Seconds as a card says them: "44 s", "5 min 36 s"."""
    s = round(s)
    return f"{s} s" if s < 60 else f"{s // 60} min {s % 60} s"


def page_total(nb) -> int:
    """The total the page prints in its last code cell ("notebook ran in N s"): the card quotes it."""
    last = [c for c in nb.cells if c.cell_type == "code"][-1]
    found = re.search(r"notebook ran in (\d+) s", "".join(o.get("text", "") for o in last.outputs))
    if not found:
        raise SystemExit("the notebook's last code cell must print 'notebook ran in N s' (its card quotes it)")
    return int(found.group(1))


def time_line(nb, when: str) -> str:
    """The card's "Time here" line for a full-mode run of `nb` (executed, timestamps not yet stripped):
    the page's own total and each section of a minute or more, on this machine's CPU and threads."""
    total = page_total(nb)
    banner = "".join(o.get("text", "") for o in nb.cells[[c.cell_type for c in nb.cells].index("code")].outputs)
    threads = re.search(r"(\d+) CPU threads", banner)
    parts = []
    for head, s in section_seconds(nb).items():
        if s >= 60:
            num = re.match(r"(\d+)\.\s*(.+)", head)
            parts.append((f"section {num.group(1)} ({num.group(2)[0].lower()}{num.group(2)[1:]})" if num else head)
                         + f" {clock(s)}")
    sections = ", ".join(parts[:-1]) + " and " + parts[-1] if len(parts) > 1 else "".join(parts)
    return (f"(written by `scripts/run_notebooks.py` from the run that made this page, {when}: {cpu()}"
            + (f", {threads.group(1)} threads" if threads else "") + f"): full mode {clock(total)} "
            f"(the last cell's {total} s)" + (f", of it {sections}" if parts else "") + ".")


def cpu() -> str:
    """The CPU's model name with its family and model numbers (the name alone can be vague: "AMD EPYC")."""
    try:
        info = dict(l.split(":", 1) for l in Path("/proc/cpuinfo").read_text().split("\n\n")[0].splitlines() if ":" in l)
        info = {k.strip(): v.strip() for k, v in info.items()}
        return f"{info['model name']}, cpu family {info['cpu family']} model {info['model']}"
    except (OSError, KeyError):
        import platform
        return platform.processor() or platform.machine()


def stamp_card(text: str, line: str) -> str:
    """`text` (a .py source or the card cell's source) with what follows "**Time here**" on its line
    replaced by `line`; exactly one such line must be there."""
    new, k = re.subn(r"(\*\*Time here\*\*)[^\n]*", lambda m: f"{m.group(1)} {line}", text)
    if k != 1:
        raise SystemExit(f"the card must hold exactly one '**Time here**' line, found {k}")
    return new


def strip_volatile(nb) -> None:
    """Drop execution timestamps and widget state/outputs (a tqdm.notebook bar, if one slips through)."""
    nb.metadata.pop("widgets", None)
    for cell in nb.cells:
        cell.metadata.pop("execution", None)
        if cell.cell_type != "code":
            continue
        outputs = []
        for out in cell.outputs:
            if WIDGET_MIME in out.get("data", {}):
                continue  # the widget's text/plain fallback ("HBox(...)") is noise, too
            outputs.append(out)
        cell.outputs = outputs


def kernel_env(small: bool, threads: int | None) -> None:
    """The kernel inherits this process's environment: set what the notebooks read."""
    if small:
        os.environ["MINIPODS_NB_SMALL"] = "1"
    else:
        os.environ.pop("MINIPODS_NB_SMALL", None)
    if threads:
        os.environ["OMP_NUM_THREADS"] = os.environ["MKL_NUM_THREADS"] = str(threads)
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), str(NB_DIR), os.environ.get("PYTHONPATH")) if p)
    os.environ["MPLBACKEND"] = "module://matplotlib_inline.backend_inline"
    os.environ["TOKENIZERS_PARALLELISM"] = "false"
    os.environ["TQDM_DISABLE"] = "1"
    for name in ("MINIPODS_GSM8K_DIR", "MINIPODS_CACHE", "MINIPODS_NB_COMPARE_DIR", "MINIPODS_NB_LAPTOP_DIR"):
        if os.environ.get(name):  # relative to where you ran make, not to notebooks/
            os.environ[name] = str(Path(os.environ[name]).resolve())


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("names", nargs="*", help="notebook name prefixes, e.g. 03 (default: all)")
    p.add_argument("--no-execute", action="store_true", help="only update the .ipynb cells from the .py sources")
    p.add_argument("--small", action="store_true", help="run in SMALL mode (MINIPODS_NB_SMALL=1), to try the pipeline")
    p.add_argument("--threads", type=int, default=None, help="OMP_NUM_THREADS for the kernel (default: environment)")
    p.add_argument("--timeout", type=int, default=3600, help="seconds one cell may run (default 3600)")
    args = p.parse_args(argv)
    paths = sources(args.names)
    if not paths:
        print(f"no notebook source in {NB_DIR.relative_to(ROOT)}/ matches {args.names}", file=sys.stderr)
        return 2
    if not args.no_execute:
        kernel_env(args.small, args.threads)
        if not os.environ.get("MINIPODS_GSM8K_DIR"):
            print("warning: MINIPODS_GSM8K_DIR is not set; notebooks may fall back to synthetic problems", file=sys.stderr)
    for py in paths:
        jupytext.cli.jupytext(["--to", "ipynb", "--update", str(py)])
        if args.no_execute:
            continue
        ipynb = py.with_suffix(".ipynb")
        nb = nbformat.read(ipynb, as_version=4)
        with tempfile.TemporaryDirectory(prefix=f"nb{py.stem[:2]}_") as cwd:  # empty: no run reused
            client = NotebookClient(nb, timeout=args.timeout, kernel_name="python3", store_widget_state=False,
                                    resources={"metadata": {"path": cwd}})
            t0 = time.perf_counter()
            client.execute()  # raises CellExecutionError (with the failing cell's traceback)
            wall = time.perf_counter() - t0
        long = {k: s for k, s in section_seconds(nb).items() if s >= 60}
        if not args.small:  # the card quotes this run's times (a SMALL run is not committed)
            line = time_line(nb, datetime.now().strftime("%Y-%m-%d"))
            nb.cells[0].source = stamp_card(nb.cells[0].source, line)
            py.write_text(stamp_card(py.read_text(), line))
        strip_volatile(nb)
        nbformat.validate(nb)
        nbformat.write(nb, ipynb)
        os.utime(py)  # the pair is in sync: keep the source newer, as `jupytext --sync` does
        print(f"ran {ipynb.relative_to(ROOT)} in {wall:.0f} s ({'SMALL' if args.small else 'full'} mode)"
              + "".join(f"\n  section {k!r}: {s:.0f} s" for k, s in long.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
