"""The teaching notebooks: each one runs top to bottom in SMALL mode and matches its jupytext source.

Each notebook's source (notebooks/NN_name.py, the file people edit) is executed in a fresh python3
kernel (nbclient) with MINIPODS_NB_SMALL=1, its working directory a temporary folder (so runs it writes
land there), and the repository on PYTHONPATH. A cell error fails the test. The notebooks assert their
takeaways themselves (e.g. max-variance == brute force, max-variance keeps more of the gradient than a
random draw, the update's activations are capped by the micro-batch): a run whose numbers contradict its
text raises AssertionError in that cell, and nbclient turns it into CellExecutionError here. SMALL mode
runs notebooks 01, 02, 04 and 05 on the package's tiny random model (their lessons are mechanics);
only 03 loads SmolLM2, whose gradient lesson needs rewards that differ; wall-clock claims (throughput
grows with the batch, update time with m) are asserted in full mode only. The committed .ipynb carry full-mode
outputs (`make notebooks`); their cells must equal the paired .py.
"""

import os
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
        "05_pods_vs_grpo.ipynb", "06_paper_runs.ipynb"]


def _cells(nb, kinds=("code", "markdown")):
    return [(c.cell_type, c.source) for c in nb.cells if c.cell_type in kinds]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_matches_source(path):
    """notebooks/NN_name.py is what people edit: the committed .ipynb must hold exactly its cells.

    Fix a failure with `jupytext --sync notebooks/NN_name.py` (cells only) or `make notebooks NB=NN`.
    """
    import jupytext

    source = path.with_suffix(".py")
    assert source.is_file(), f"{path.name} has no paired source {source.name}"
    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    text = jupytext.read(source)  # percent format, per notebooks/jupytext.toml
    assert _cells(nb, ("code",)) == _cells(text, ("code",)), f"{path.name} code cells differ from {source.name}"
    assert _cells(nb) == _cells(text), f"{path.name} markdown cells differ from {source.name}"
    assert "widgets" not in nb.metadata, f"{path.name} stores widget state"
    for i, cell in enumerate(nb.cells):
        for out in cell.get("outputs", []):
            assert "application/vnd.jupyter.widget-view+json" not in out.get("data", {}), \
                f"{path.name} cell {i} has a widget output"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_committed_notebook_has_outputs(path):
    """The committed notebooks carry a real full-mode run, in order, for readers on the repository page."""
    nb = nbformat.read(path, as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    counts = [c.execution_count for c in code]
    assert None not in counts, f"{path.name} has unexecuted code cells: run `make notebooks NB={path.stem[:2]}`"
    assert counts == list(range(1, len(code) + 1)), f"{path.name} was not run top to bottom in one kernel"
    banner = "".join(out.get("text", "") for out in code[0].outputs)  # the setup cell prints the mode
    assert banner.startswith("full mode"), f"{path.name} outputs are not from a full-mode run: {banner[:40]!r}"


def _abs_env_path(monkeypatch, name):
    """Env paths given relative to the repository (as CI does) must survive the kernel's other cwd."""
    value = os.environ.get(name)
    if value and not os.path.isabs(value):
        monkeypatch.setenv(name, str(Path(value).resolve()))


@pytest.mark.slow
@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_runs_small(path, tmp_path, monkeypatch):
    """The source runs top to bottom in SMALL mode, every takeaway assert included."""
    import jupytext
    from nbclient import NotebookClient

    monkeypatch.setenv("MINIPODS_NB_SMALL", "1")
    monkeypatch.delenv("MINIPODS_NB_COMPARE_DIR", raising=False)  # notebook 05 runs its own comparison
    monkeypatch.setenv("MPLBACKEND", "module://matplotlib_inline.backend_inline")
    # the repository and notebooks/ (its helper module `lessons`, imported as a notebook opened in
    # Jupyter imports it: from the notebook's own folder)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(ROOT), str(NB_DIR), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep))
    monkeypatch.setenv("TOKENIZERS_PARALLELISM", "false")
    # SMALL-mode cells are tiny, overhead-bound workloads: one intra-op thread loses little, and it
    # avoids OpenMP oversubscription when the machine is shared (measured on the 2-core dev box with
    # other jobs running: 3 min for all five notebooks with 1 thread, 9.5 min with 2). An explicit
    # OMP_NUM_THREADS in the environment wins.
    if not os.environ.get("OMP_NUM_THREADS"):
        monkeypatch.setenv("OMP_NUM_THREADS", "1")
    for name in ("MINIPODS_GSM8K_DIR", "MINIPODS_CACHE"):
        _abs_env_path(monkeypatch, name)
    nb = jupytext.read(path.with_suffix(".py"))  # the source, so an edit is tested before `make notebooks`
    client = NotebookClient(nb, timeout=CELL_TIMEOUT_S, kernel_name="python3",
                            resources={"metadata": {"path": str(tmp_path)}})
    t0 = time.perf_counter()
    client.execute()  # raises CellExecutionError (the cell's traceback: e.g. a takeaway's AssertionError)
    print(f"{path.name}: {time.perf_counter() - t0:.1f} s")
