"""Regenerate the teaching notebooks from their sources and run them: `make notebooks` (or `NB=03`).

`notebooks/NN_name.py` (jupytext percent format) is the file you edit. For each one this script
1. updates the paired `notebooks/NN_name.ipynb` from it (`jupytext --to ipynb --update`: the cells come
   from the .py, the .ipynb keeps its cell ids and metadata, so the diff is the cells that changed);
2. executes it top to bottom in a fresh python3 kernel, in place, in FULL mode (the sizes meant for
   reading; `--small` runs the test suite's tiny sizes instead, to try the pipeline: don't commit those),
   with `notebooks/` as the working directory (runs a notebook writes land in the gitignored
   `notebooks/runs/`);
3. prints its wall time, and each section's that took a minute or more (the opening cards quote them);
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
        client = NotebookClient(nb, timeout=args.timeout, kernel_name="python3", store_widget_state=False,
                                resources={"metadata": {"path": str(NB_DIR)}})
        t0 = time.perf_counter()
        client.execute()  # raises CellExecutionError (with the failing cell's traceback)
        wall = time.perf_counter() - t0
        long = {k: s for k, s in section_seconds(nb).items() if s >= 60}  # the opening cards quote these
        strip_volatile(nb)
        nbformat.validate(nb)
        nbformat.write(nb, ipynb)
        os.utime(py)  # the pair is in sync: keep the source newer, as `jupytext --sync` does
        print(f"ran {ipynb.relative_to(ROOT)} in {wall:.0f} s ({'SMALL' if args.small else 'full'} mode)"
              + "".join(f"\n  section {k!r}: {s:.0f} s" for k, s in long.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
