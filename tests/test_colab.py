"""requirements-colab.txt (issue 48): what a GPU notebook installs beside its own torch, numpy and jupyter.
Static only: the install itself is scripts/check_colab_install.sh (it downloads and builds a venv)."""
import re
from pathlib import Path

import pytest

pytestmark = pytest.mark.docs  # its own tier: CI runs it; `-m 'not docs'` skips it

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK_OWN = {"torch", "numpy", "jupyter", "ipykernel"}  # what the notebook has and pip must not replace


def pins(path: Path) -> dict[str, str]:
    """{normalised name: version} of a requirements file's `name==version` lines; any other requirement
    line (a range, an option, a bare name) is an error, so nothing enters unpinned."""
    out = {}
    for line in path.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        m = re.fullmatch(r"([A-Za-z0-9_.\-]+)==([0-9][0-9A-Za-z.+\-]*)", line)
        assert m, f"{path.name}: not a `name==version` pin: {line!r}"
        out[re.sub(r"[-_.]+", "-", m.group(1)).lower()] = m.group(2)
    return out


def test_colab_requirements_leave_the_notebooks_own_packages_alone_and_keep_the_tested_pins():
    colab, full = pins(ROOT / "requirements-colab.txt"), pins(ROOT / "requirements.txt")
    assert not NOTEBOOK_OWN & set(colab)
    assert {name: full.get(name) for name in colab} == colab  # each pin is requirements.txt's
    # everything the package needs from requirements.txt is there: all but the notebook's own and the
    # notebook/test tooling
    assert set(full) - set(colab) == NOTEBOOK_OWN | {"jupytext", "nbclient", "nbformat", "pytest", "pytest-xdist"}

