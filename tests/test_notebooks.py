"""The teaching notebooks: each one runs top to bottom in SMALL mode, and the committed files are clean.

Each notebook is executed in a fresh python3 kernel (nbclient) with MINIPODS_NB_SMALL=1, its working
directory a temporary folder (so runs it writes land there), and the repository on PYTHONPATH. A cell
error fails the test; the notebooks assert key facts themselves (e.g. max-variance == brute force).
"""

import os
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parent.parent
NB_DIR = ROOT / "notebooks"
NOTEBOOKS = sorted(NB_DIR.glob("*.ipynb"))
CELL_TIMEOUT_S = 600


def test_notebooks_exist():
    assert [p.name for p in NOTEBOOKS] == [
        "01_rollouts.ipynb", "02_rewards.ipynb", "03_max_variance.ipynb", "04_grpo_update.ipynb",
        "05_pods_vs_grpo.ipynb"]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_committed_notebook_is_clean(path):
    """No outputs, execution counts or widget state in the committed files (they are read on GitHub)."""
    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    for i, cell in enumerate(nb.cells):
        if cell.cell_type == "code":
            assert cell.outputs == [], f"{path.name} cell {i} has outputs: strip them"
            assert cell.execution_count is None, f"{path.name} cell {i} has an execution count"
    assert "widgets" not in nb.metadata, f"{path.name} stores widget state"


def test_notebooks_match_generator():
    """scripts/make_notebooks.py is how the notebooks are written; the committed files must match it."""
    r = subprocess.run([sys.executable, str(ROOT / "scripts" / "make_notebooks.py"), "--check"],
                       capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0, r.stderr


def _abs_env_path(monkeypatch, name):
    """Env paths given relative to the repository (as CI does) must survive the kernel's other cwd."""
    value = os.environ.get(name)
    if value and not os.path.isabs(value):
        monkeypatch.setenv(name, str(Path(value).resolve()))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_runs_small(path, tmp_path, monkeypatch):
    from nbclient import NotebookClient

    monkeypatch.setenv("MINIPODS_NB_SMALL", "1")
    monkeypatch.setenv("MPLBACKEND", "module://matplotlib_inline.backend_inline")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep))
    monkeypatch.setenv("TOKENIZERS_PARALLELISM", "false")
    # SMALL-mode cells are tiny, overhead-bound workloads: one intra-op thread loses little, and it
    # avoids OpenMP oversubscription when the machine is shared (measured on the 2-core dev box with
    # other jobs running: 3 min for all five notebooks with 1 thread, 9.5 min with 2). An explicit
    # OMP_NUM_THREADS in the environment wins.
    if not os.environ.get("OMP_NUM_THREADS"):
        monkeypatch.setenv("OMP_NUM_THREADS", "1")
    for name in ("MINIPODS_GSM8K_DIR", "MINIPODS_CACHE"):
        _abs_env_path(monkeypatch, name)
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(nb, timeout=CELL_TIMEOUT_S, kernel_name="python3",
                            resources={"metadata": {"path": str(tmp_path)}})
    t0 = time.perf_counter()
    client.execute()  # raises CellExecutionError (with the cell's traceback) on any failing cell
    print(f"{path.name}: {time.perf_counter() - t0:.1f} s")
