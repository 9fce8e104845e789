"""Test-session settings: never reach for the network, and make the data path absolute so that
notebooks and subprocesses started from other folders find GSM8K too."""
import os
import random
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
# Under pytest-xdist (pyproject's `-n auto`) each worker is one process per core: one intra-op thread each,
# so two workers on two cores do not fight over them (tiny models gain little from a second thread). The
# subprocesses tests start inherit it; an explicit OMP_NUM_THREADS wins.
if os.environ.get("PYTEST_XDIST_WORKER"):
    os.environ.setdefault("OMP_NUM_THREADS", "1")
if os.environ.get("MINIPODS_GSM8K_DIR"):
    os.environ["MINIPODS_GSM8K_DIR"] = str(Path(os.environ["MINIPODS_GSM8K_DIR"]).resolve())



@pytest.fixture(autouse=True)
def _learning_curve_only_where_checked(request, monkeypatch):
    """The figure a run draws at its end (learning_curve.png) takes a tiny test run about half its time: drawn only
    in tests marked `learning_curve` (the ones that check it); analysis.plots keeps its own reference, tested apart."""
    if request.node.get_closest_marker("learning_curve") is None:
        import minipods.learning_curve
        monkeypatch.setattr(minipods.learning_curve, "plot_learning_curve", lambda *a, **k: None)

def pytest_collection_modifyitems(config, items):
    """Tests marked `cuda` need a CUDA GPU: skipped (with the reason) where there is none."""
    cuda_items = [it for it in items if it.get_closest_marker("cuda")]
    if not cuda_items:
        return
    import torch
    if not torch.cuda.is_available():
        for it in cuda_items:
            it.add_marker(pytest.mark.skip(reason="needs a CUDA GPU"))


def load_script(name: str):
    """A module of scripts/ (they are run as files, not installed): `load_script("repro")`."""
    import importlib.util
    import sys

    path = Path(__file__).resolve().parent.parent / "scripts" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"scripts_{name}", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def adapted_tiny(seed=0, std=0.02, dtype=None):
    """The tiny policy with a seeded non-zero LoRA B, so the adapter (and any folding of it, and its
    gradient) matters. Tests import it: `from conftest import adapted_tiny`."""
    import torch

    from minipods.twins.tiny import tiny_policy

    model, tok = tiny_policy(seed=seed)
    if dtype is not None:
        model.to(dtype)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "lora_B" in name:
                p.normal_(0, std, generator=torch.Generator().manual_seed(1))
    return model, tok


@pytest.fixture(scope="module")
def batch():
    """8 sampled rollouts of the tiny policy: 2 prompts x n = 4 (group-major)."""
    import torch

    from minipods.data import build_prompt
    from minipods.fast.rollouts import generate_rollouts
    from minipods.twins.tiny import tiny_policy

    model, tok = tiny_policy(seed=0)
    torch.manual_seed(0)
    prompts = [build_prompt(tok, q) for q in ["1+1?", "What is two plus three?"]]
    return generate_rollouts(model, tok, prompts, 4, max_new_tokens=24, temperature=1.0)


class Kill(BaseException):
    """A simulated hard kill (SIGKILL, a power cut): not an Exception, so no handler runs on the way out."""


class WritePoints:
    """The points where a run can be cut, reached by patching (the package has no test hooks): each file
    minipods.checkpoint writes, cut half-way ("append:torn" for metrics.jsonl, "atomic:torn" for write_atomic's
    temporary file, "trainer.pt:torn", "state.json:torn"); each of its renames, before and after ("rename
    checkpoint.old:after"; "rename atomic:before" for write_atomic's); each adapter save as it starts ("adapter
    checkpoint:start", "adapter final:start"); a step after its rollouts and after its update ("step:rollouts",
    "step:update"). `seen` lists the points passed since `watch`; `watch(name, k, exc)` makes the k-th `name`
    (name None: the k-th point of any kind) raise `exc`. The end-of-run figure is not drawn (it is no write
    point of a run's state, and takes half of a tiny run's time)."""

    def __init__(self, monkeypatch):
        import types

        import minipods.checkpoint as ck
        import minipods.learning_curve
        import minipods.train as T

        self.seen, self.target = [], None
        write, save, score, metrics, replace = (ck._write_file, ck._save_adapter_files, T.score_completions,
                                                T.step_metrics, os.replace)

        def write_file(path, data, mode="wb"):
            kind = "append" if "a" in mode else "atomic" if path.name.endswith(".tmp") else path.name
            if self.at(f"{kind}:torn"):
                write(path, data[:len(data) // 2], mode)  # a short write, then the fault
                raise self.target[2]
            return write(path, data, mode)

        def rename(src, dst):
            kind = Path(dst).name if Path(dst).name in ("checkpoint", "checkpoint.old", "adapter") else "atomic"
            self.fault(f"rename {kind}:before")
            replace(src, dst)
            if kind != "atomic":  # after write_atomic's rename: the next point's "before"
                self.fault(f"rename {kind}:after")

        def save_adapter(model, folder):
            self.fault(f"adapter {'final' if folder.name == 'adapter.tmp' else 'checkpoint'}:start")
            return save(model, folder)

        os_seen_by_checkpoint = types.ModuleType("os")
        os_seen_by_checkpoint.__dict__.update(vars(os), replace=rename)
        monkeypatch.setattr(ck, "os", os_seen_by_checkpoint)
        monkeypatch.setattr(ck, "_write_file", write_file)
        monkeypatch.setattr(ck, "_save_adapter_files", save_adapter)
        monkeypatch.setattr(T, "score_completions", lambda *a: (self.fault("step:rollouts"), score(*a))[1])
        monkeypatch.setattr(T, "step_metrics", lambda *a: (self.fault("step:update"), metrics(*a))[1])
        monkeypatch.setattr(minipods.learning_curve, "plot_learning_curve", lambda *a, **k: None)

    def watch(self, name=None, k=0, exc=None):
        self.seen, self.target = [], (name, k, exc) if exc else None

    def at(self, name) -> bool:
        self.seen.append(name)
        if self.target is None:
            return False
        want, k, _ = self.target
        return (len(self.seen) if want is None else self.seen.count(name) if want == name else -1) == k

    def fault(self, name):
        if self.at(name):
            raise self.target[2]


def first_last_and_sample(names: list[str], seed: int, extra: int) -> list[tuple[str, int]]:
    """(kind, k) cases of a fault sweep over the points `names` of a run: each kind's first and last
    occurrence, and `extra` seeded draws among the occurrences in between."""
    ends = {(kind, k) for kind in set(names) for k in (1, names.count(kind))}
    middle = sorted({(kind, k) for kind in set(names) for k in range(2, names.count(kind))})
    return sorted(ends) + random.Random(seed).sample(middle, min(extra, len(middle)))


@pytest.fixture
def write_points(monkeypatch):
    return WritePoints(monkeypatch)
