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
outputs (`make notebooks`); their cells must equal the paired .py. The exercise cells run with their stubs as
given: each unanswered check prints one line and the notebook goes on (tests/test_exercises.py checks the
cells). On a CUDA runtime the notebooks keep their models on the CPU (what they time is a CPU):
`test_notebooks_pin_the_cpu` checks it with CUDA simulated.
"""

import os
import time
from pathlib import Path

import nbformat
import numpy as np
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


def _outputs_text(cell) -> str:
    return "".join(out.get("text", "") + "".join(v for k, v in out.get("data", {}).items() if k.startswith("text/"))
                   for out in cell.get("outputs", []))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_committed_outputs_skip_no_run(path):
    """The committed page trained in its own run: scripts/run_notebooks.py executes each notebook in an
    empty temporary folder, so no output may say an arm "finished earlier ..., skipped" (a run reused)."""
    import re

    nb = nbformat.read(path, as_version=4)
    for i, cell in enumerate(nb.cells):
        hit = re.search(r"finished earlier[^\n]*skipped", _outputs_text(cell))
        assert not hit, f"{path.name} cell {i} reused a run ({hit.group(0)!r}): re-run `python scripts/run_notebooks.py {path.stem[:2]}`"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_card_time_is_the_page_total(path):
    """The card's time is written by scripts/run_notebooks.py from the run that made the page: the total
    it quotes is the one the page's last cell prints."""
    import re

    nb = nbformat.read(path, as_version=4)
    card = re.search(r"\*\*Time here\*\* \(written by `scripts/run_notebooks.py`[^\n]*the last cell's (\d+) s\)",
                     nb.cells[0].source)
    assert card, f"{path.name}'s card has no generated time line: re-run `python scripts/run_notebooks.py {path.stem[:2]}`"
    last = [c for c in nb.cells if c.cell_type == "code"][-1]
    page = re.search(r"notebook ran in (\d+) s", _outputs_text(last))
    assert page and page.group(1) == card.group(1), \
        f"{path.name}: card says {card.group(1)} s, the page's last cell {page.group(1) if page else None} s"


def test_card_time_line_is_generated():
    """run_notebooks.py's card line: the page's own total, sections of a minute or more, in both files."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("run_notebooks", ROOT / "scripts" / "run_notebooks.py")
    rn = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(rn)
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_markdown_cell("# card\n> * **Time here** TIME_LINE\n> * next"),
        nbformat.v4.new_code_cell("", outputs=[nbformat.v4.new_output("stream", text="full mode | 2 CPU threads\n")]),
        nbformat.v4.new_markdown_cell("## 3. Batched generation"),
        nbformat.v4.new_code_cell("", outputs=[nbformat.v4.new_output("stream", text="notebook ran in 336 s (full mode)\n")])])
    stamp = lambda a, b: {"iopub.execute_input": f"2026-01-01T00:{a}Z", "shell.execute_reply": f"2026-01-01T00:{b}Z"}
    nb.cells[1].metadata["execution"] = stamp("00:00", "00:30")
    nb.cells[3].metadata["execution"] = stamp("00:30", "05:36")
    line = rn.time_line(nb, "2026-01-01")
    assert "2 threads" in line and "full mode 5 min 36 s (the last cell's 336 s)" in line
    assert "section 3 (batched generation) 5 min 6 s" in line and "setup" not in line  # 30 s: under a minute
    card = rn.stamp_card(nb.cells[0].source, line)
    assert card.splitlines()[1] == f"> * **Time here** {line}" and card.endswith("> * next")
    with pytest.raises(SystemExit):
        rn.stamp_card("no card line", line)
    nb.cells[3].outputs = []
    with pytest.raises(SystemExit):
        rn.time_line(nb, "2026-01-01")


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


# the calls through which a notebook picks a device: (module-level name, its positional index of `device`)
DEVICE_CALLS = {"load_policy": None, "make_optimizer": 2, "Context": None, "run_comparison": None, "machine_limits": 2}


def _device_arg(call, pos):
    """The expression a call passes as `device` (keyword, or positional at index `pos`), or None."""
    kw = next((k.value for k in call.keywords if k.arg == "device"), None)
    return kw if kw is not None or pos is None or len(call.args) <= pos else call.args[pos]


def test_notebooks_pin_the_cpu(monkeypatch, tmp_path):
    """On a CUDA runtime (simulated: torch reports a GPU) the notebooks' models and CPU timings stay on the CPU.

    Statically: every notebook that loads a model sets DEVICE = "cpu" and passes DEVICE to each loader,
    optimizer, timer and comparison it calls. Dynamically, with CUDA reported present: load_policy(...,
    device="cpu") (the notebooks' call) keeps a CPU float32 model, and the helpers of lessons.py time, sample
    and update it without building a tensor on a CUDA device (this torch has none: any would raise)."""
    import ast
    import sys

    import torch

    for src in sorted(NB_DIR.glob("0[1-5]_*.py")):
        tree = ast.parse(src.read_text())  # jupytext percent format: markdown cells are comments
        assert any(isinstance(n, ast.Assign) and [t.id for t in n.targets if isinstance(t, ast.Name)] == ["DEVICE"]
                   and isinstance(n.value, ast.Constant) and n.value.value == "cpu" for n in tree.body), src.name
        for call in (n for n in ast.walk(tree) if isinstance(n, ast.Call)):
            name = getattr(call.func, "id", getattr(call.func, "attr", None))
            if name in DEVICE_CALLS and not (name == "run_comparison" and any(k.arg == "model_factory" for k in call.keywords)):
                arg = _device_arg(call, DEVICE_CALLS[name])
                assert isinstance(arg, ast.Name) and arg.id == "DEVICE", f"{src.name}:{call.lineno} {name} without device=DEVICE"

    from minipods.grpo import grpo_update
    from minipods.model import default_device, load_policy
    from minipods.fast.rollouts import generate_rollouts
    from minipods.train import make_config, make_optimizer
    from minipods.twins.tiny import tiny_policy

    import peft  # noqa: F401  (imported before the simulation: bitsandbytes would load its CUDA backend)

    base, tok = tiny_policy(lora=False)
    base.save_pretrained(tmp_path)
    tok.save_pretrained(tmp_path)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    assert default_device() == "cuda"  # the simulation holds: an unpinned load would now go to CUDA
    model, tok = load_policy(str(tmp_path), device="cpu", lora_r=4, lora_alpha=8)
    assert {(p.device.type, p.dtype) for p in model.parameters()} == {("cpu", torch.float32)}
    monkeypatch.syspath_prepend(str(NB_DIR))
    sys.modules.pop("lessons", None)
    import lessons

    seconds = lessons.weight_matmul_seconds(model, [1, 2], repeats=1)
    assert sorted(seconds) == [1, 2] and all(0 < s < 10 for s in seconds.values())
    ro = generate_rollouts(model, tok, ["a b c"], 2, max_new_tokens=3)
    assert ro.completion_ids.device.type == "cpu"
    stats = grpo_update(model, make_optimizer(model, make_config(lr=1e-3), "cpu"), ro, torch.tensor([1.0, -1.0]))
    assert stats["skipped"] == 0
    t = lessons.selection_times(lambda r, m: sorted(r)[:m], lambda r, m: sorted(r)[:m], [64], [6], np.random.default_rng(0), repeat=1)
    assert len(t["fast"]) == 1 and len(t["bf"]) == 1
