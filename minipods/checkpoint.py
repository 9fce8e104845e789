"""Run-folder bookkeeping: checkpoints, RNG states, the metrics log, one process per folder.

Not part of the paper; it is what makes a long RL run safe to stop. Guarantees:
  * `save_checkpoint` is atomic: files are written and fsynced in `checkpoint.tmp/`, then the
    folder is swapped in with renames (the previous one survives as `checkpoint.old/` until the
    new one is in place). A kill at any instant leaves at least one whole checkpoint (or none,
    before the first save).
  * `load_checkpoint` checks that a checkpoint is whole (state, optimizer+RNG, adapter all
    readable) and falls back to the older one; if none is whole it raises `RunError` naming the
    file and what to do.
  * `append_row` writes one JSON line and fsyncs; `read_log` drops a torn *last* line (a kill
    during the append: that step comes after the checkpoint and runs again) and refuses anything
    else that is broken.
  * `RunLock`: an flock on OUTPUT_DIR/.lock. A second process on the same folder gets a one-line
    error naming the holder's pid; a killed process's lock is released by the kernel, so
    kill-then-resume just works.
  * `fault_point(name)`: a no-op hook placed between the steps of a save and of a training step, so
    tests can inject a "kill" at any of them (`FAULT_HOOK`).
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import random
import shutil
import signal
from pathlib import Path

import numpy as np
import torch

CHECKPOINT, TMP, OLD = "checkpoint", "checkpoint.tmp", "checkpoint.old"
LOCK_FILE = ".lock"
EVAL_DIR = "eval"  # OUTPUT_DIR/eval/step_{step:05d}.jsonl: one row per question of each evaluation
FAULT_HOOK = None  # tests set a callable(name) that may raise, to simulate a kill at that point


def fault_point(name: str) -> None:
    if FAULT_HOOK is not None:
        FAULT_HOOK(name)


class RunError(ValueError):
    """A run folder that cannot be used as asked; the message is one line saying what to do."""


# ---------------------------------------------------------------- the run folder
def prepare_output_dir(out: Path) -> Path:
    """Create `out` (and parents); a path that is a file or not writable raises RunError."""
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise RunError(f"output path {out} exists and is not a folder; choose another --output-dir")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError):
        raise RunError(f"output path {out} is under a file, not a folder; choose another --output-dir") from None
    except OSError as e:
        raise RunError(f"cannot create output folder {out}: {e.strerror}; choose another --output-dir") from None
    if not os.access(out, os.W_OK | os.X_OK):
        raise RunError(f"output folder {out} is not writable; choose another --output-dir")
    return out


class RunLock:
    """Exclusive lock on a run folder for the life of a process (`with RunLock(out): ...`)."""

    def __init__(self, out: Path):
        self.path = Path(out) / LOCK_FILE
        self.fd = None

    def __enter__(self):
        import fcntl

        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as e:
            holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or "unknown"
            os.close(fd)
            if e.errno in (errno.EAGAIN, errno.EACCES):
                raise RunError(f"{self.path.parent} is in use by another minipods process (pid {holder}); "
                               "wait for it or stop it, then run again") from None
            raise
        os.ftruncate(fd, 0)
        os.pwrite(fd, str(os.getpid()).encode(), 0)  # who holds it, for the message above
        self.fd = fd
        return self

    def __exit__(self, *exc):
        if self.fd is not None:
            os.close(self.fd)  # closing releases the flock (so does the process dying)
            self.fd = None


@contextlib.contextmanager
def sigterm_as_interrupt():
    """Treat SIGTERM like Ctrl-C inside the block, so `kill PID` also checkpoints and stops."""
    def on_term(signum, frame):
        raise KeyboardInterrupt
    try:
        old = signal.signal(signal.SIGTERM, on_term)
    except ValueError:  # not the main thread: leave signals alone
        old = None
    try:
        yield
    finally:
        if old is not None:
            signal.signal(signal.SIGTERM, old)


# ---------------------------------------------------------------- durable files
def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_atomic(path: Path, text: str) -> None:
    """Replace `path` with `text` all at once (temp file, fsync, rename)."""
    path = Path(path)
    tmp = path.with_name(path.name + ".tmp")
    with tmp.open("w") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    fault_point("write_atomic")  # a kill here leaves the old file (or none) in place
    os.replace(tmp, path)
    _fsync_dir(path.parent)


def append_row(path: Path, row: dict) -> None:
    """Append one JSON line and make it durable before returning (a kill during the write can leave
    a torn last line: `read_log` drops it)."""
    line = json.dumps(row) + "\n"
    fault_point("append_row")
    with Path(path).open("a") as f:
        f.write(line)
        f.flush()
        os.fsync(f.fileno())


def read_log(path: Path, drop_torn_tail: bool = True) -> list[dict]:
    """The JSON rows of a metrics file. A last line without its newline that does not parse is a
    torn append (dropped when `drop_torn_tail`); any other bad line raises RunError."""
    path = Path(path)
    if not path.is_file():
        return []
    lines = path.read_text().split("\n")  # the last element is "" when the file ends with a newline
    rows = []
    for i, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError:
            if i == len(lines) and drop_torn_tail:
                break  # torn tail: written by a step after the last checkpoint
            raise RunError(f"{path}:{i} is not valid JSON (a damaged metrics file); "
                           "repair or delete that line, then run again") from None
    return rows


def eval_path(run_dir: str | Path, step: int) -> Path:
    return Path(run_dir) / EVAL_DIR / f"step_{step:05d}.jsonl"


def eval_steps(run_dir: str | Path) -> list[int]:
    """Steps that have a per-question evaluation file, ascending."""
    d = Path(run_dir) / EVAL_DIR
    if not d.is_dir():
        return []
    return sorted(int(p.stem[5:]) for p in d.glob("step_*.jsonl") if p.stem[5:].isdigit())


# ---------------------------------------------------------------- RNG
def rng_state() -> dict:
    st = {"torch": torch.get_rng_state(), "python": random.getstate(), "numpy": np.random.get_state()}
    if torch.cuda.is_available():
        st["cuda"] = torch.cuda.get_rng_state_all()
    return st


def set_rng_state(st: dict) -> None:
    torch.set_rng_state(st["torch"])
    random.setstate(st["python"])
    np.random.set_state(st["numpy"])
    if "cuda" in st and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(st["cuda"])


# ---------------------------------------------------------------- checkpoints
def save_checkpoint(out: Path, model, optimizer, state: dict) -> Path:
    """Write OUTPUT_DIR/checkpoint atomically: LoRA adapter, optimizer + RNG states, and state.json
    (step, elapsed time, ...), built in checkpoint.tmp then swapped in by renames."""
    for p in model.parameters():
        if p.requires_grad and not torch.isfinite(p).all():
            raise RuntimeError("refusing to checkpoint non-finite adapter weights")
    out = Path(out)
    final, tmp, old = out / CHECKPOINT, out / TMP, out / OLD
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    model.save_pretrained(tmp / "adapter")
    fault_point("save:adapter")
    torch.save({"optimizer": optimizer.state_dict(), "rng": rng_state()}, tmp / "trainer.pt")
    fault_point("save:trainer")
    (tmp / "state.json").write_text(json.dumps(state, indent=1))  # written last: marks the folder whole
    for f in [*tmp.rglob("*")]:
        if f.is_file():
            with f.open("rb+") as fh:
                os.fsync(fh.fileno())
    _fsync_dir(tmp)
    fault_point("save:files")
    if final.exists():
        shutil.rmtree(old, ignore_errors=True)
        os.replace(final, old)
        fault_point("save:moved_old")
    os.replace(tmp, final)
    _fsync_dir(out)
    fault_point("save:swapped")
    shutil.rmtree(old, ignore_errors=True)
    return final


def _load_whole(ckpt: Path) -> dict:
    """Read every part of one checkpoint; raise if any part is missing or damaged."""
    from safetensors.torch import load_file

    state = json.loads((ckpt / "state.json").read_text())
    if not isinstance(state, dict) or "step" not in state:
        raise ValueError("state.json has no step")
    trainer = torch.load(ckpt / "trainer.pt", weights_only=False, map_location="cpu")
    adapter = load_file(str(ckpt / "adapter" / "adapter_model.safetensors"))
    return {"path": ckpt, "state": state, "trainer": trainer, "adapter": adapter}


def load_checkpoint(out: Path) -> dict | None:
    """The newest whole checkpoint of a run folder as {path, state, trainer, adapter}, None if the
    folder has none at all; RunError when checkpoints exist but none can be read."""
    out = Path(out)
    found = [out / name for name in (CHECKPOINT, OLD) if (out / name).is_dir()]
    # checkpoint.old can be the only whole one: a kill between the two renames of a save
    errors = []
    for ckpt in found:
        try:
            return _load_whole(ckpt)
        except Exception as e:  # noqa: BLE001 - any unreadable part means "not whole"
            errors.append(f"{ckpt}: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}")
    if errors:
        raise RunError(f"no whole checkpoint in {out} ({'; '.join(errors)}); delete the damaged folder(s) to "
                       "restart from step 1 with --resume, or use another --output-dir")
    return None

