"""Run-folder bookkeeping (not from the paper): checkpoints, RNG states, the metrics log, one process per folder.

docs/training.md ("Outputs") says what each file holds. Every write is atomic or an fsynced append, so a
kill at any point leaves a whole checkpoint; a run folder is data, never code (else `Refused`)."""

from __future__ import annotations

import contextlib
import errno
import io
import json
import os
import random
import shutil
import signal
from pathlib import Path

import numpy as np
import torch

from minipods.cli import first_line

CHECKPOINT, TMP, OLD = "checkpoint", "checkpoint.tmp", "checkpoint.old"
LOCK_FILE = ".lock"
EVAL_DIR = "eval"  # OUTPUT_DIR/eval/step_{step:05d}.jsonl: one row per question of each evaluation


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


@contextlib.contextmanager
def RunLock(out: Path):  # noqa: N802 - a context manager named as the class it was
    """`with RunLock(out):` one process per run folder: filelock's lock on OUTPUT_DIR/.lock, released if it dies."""
    from filelock import FileLock, Timeout
    path, holder = Path(out) / LOCK_FILE, "unknown"
    try:
        held = FileLock(path, timeout=0).acquire()
    except Timeout:
        with contextlib.suppress(OSError, IndexError):  # Windows: the holder's lock keeps the file unreadable
            holder = path.read_text().split()[0]  # our pid, or filelock's marker (its pid first)
        raise RunError(f"{path.parent} is in use by another minipods process (pid {holder}); "
                       "wait for it or stop it, then run again") from None
    with held:  # released on exit
        if getattr(held.lock, "pid", None) is None:  # flock, LockFileEx: no marker of filelock's own
            with contextlib.suppress(OSError):  # Windows: the lock keeps the file unwritable; the pid goes unnamed
                path.write_text(str(os.getpid()))  # who holds it, for the message above
        yield


@contextlib.contextmanager
def sigterm_as_interrupt():
    """Treat SIGTERM like Ctrl-C inside the block, so `kill PID` also checkpoints and stops."""
    try:
        old = signal.signal(signal.SIGTERM, signal.default_int_handler)  # raises KeyboardInterrupt
    except ValueError:  # not the main thread: leave signals alone
        old = None
    try:
        yield
    finally:
        if old is not None:
            signal.signal(signal.SIGTERM, old)


# ---------------------------------------------------------------- durable files
def _fsync_dir(path: Path) -> None:
    if hasattr(os, "O_DIRECTORY"):  # not on Windows, which cannot open a folder (NTFS journals the rename itself)
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _write_file(path: Path, data: bytes, mode: str = "wb") -> None:
    """Write (or with mode "ab" append) `data`, durable on return: every file this module writes itself."""
    with open(path, mode) as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())


def write_atomic(path: Path, text: str) -> None:
    """Replace `path` with `text` all at once (temp file, fsync, rename: a kill leaves the old file or none)."""
    path = Path(path)
    tmp = path.with_name(path.name + ".tmp")
    try:
        _write_file(tmp, text.encode())
        os.replace(tmp, path)
    except OSError:  # a full disk: give the space of the half-written copy back
        tmp.unlink(missing_ok=True)
        raise
    _fsync_dir(path.parent)


def append_row(path: Path, row: dict) -> None:
    """Append one JSON line, durable on return (a kill mid-write leaves a torn line: `read_log` drops it)."""
    _write_file(Path(path), (json.dumps(row) + "\n").encode(), "ab")


def read_log(path: Path, drop_torn_tail: bool = True) -> list[dict]:
    """A metrics file's JSON rows; a torn last append is dropped (`drop_torn_tail`), any other bad line: RunError."""
    path = Path(path)
    if not path.is_file():
        return []
    lines, rows = path.read_text().split("\n"), []  # lines[-1] is "" when the file ends with a newline
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


def write_rows(path: Path, rows: list[dict]) -> Path:
    """One JSON line per row, written atomically (a kill mid-write leaves the old file or none)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, "".join(json.dumps(r) + "\n" for r in rows))
    return path


def eval_path(run_dir: str | Path, step: int) -> Path:
    return Path(run_dir) / EVAL_DIR / f"step_{step:05d}.jsonl"


def eval_steps(run_dir: str | Path) -> list[int]:
    """Steps that have a per-question evaluation file, ascending (none without an eval/ folder)."""
    return sorted(int(p.stem[5:]) for p in (Path(run_dir) / EVAL_DIR).glob("step_*.jsonl") if p.stem[5:].isdigit())


# ---------------------------------------------------------------- RNG
def rng_state() -> dict:
    """Every RNG's state as plain values (what `torch.load(weights_only=True)` accepts)."""
    version, internal, gauss_next = random.getstate()
    kind, key, pos, has_gauss, cached = np.random.get_state(legacy=True)
    st = {"torch": torch.get_rng_state(),
          "python": {"version": version, "internal": list(internal), "gauss_next": gauss_next},
          "numpy": {"kind": kind, "key": key.tolist(), "pos": int(pos), "has_gauss": int(has_gauss),
                    "cached_gaussian": float(cached)}}
    if torch.cuda.is_available():
        st["cuda"] = torch.cuda.get_rng_state_all()
    return st


def set_rng_state(st: dict) -> None:
    py, npy = st["python"], st["numpy"]
    torch.set_rng_state(st["torch"])
    random.setstate((py["version"], tuple(py["internal"]), py["gauss_next"]))
    np.random.set_state((npy["kind"], np.array(npy["key"], dtype=np.uint32), npy["pos"], npy["has_gauss"],
                         npy["cached_gaussian"]))
    if "cuda" in st and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(st["cuda"])


# ---------------------------------------------------------------- checkpoints
ADAPTER_WEIGHTS = "adapter_model.safetensors"


@contextlib.contextmanager
def stop_on_os_error(out: Path):
    """An OSError inside the block (a full disk, a lost mount) becomes a one-line RunError."""
    try:
        yield
    except OSError as e:
        where = f" ({e.filename})" if e.filename else ""
        raise RunError(f"run in {out} stopped: {e.strerror or e}{where}; its last whole checkpoint and complete "
                       "metrics rows are kept: free space (or fix the cause), then continue with --resume") from None


def _save_adapter_files(model, folder: Path) -> None:
    from safetensors import SafetensorError
    try:
        model.save_pretrained(folder)  # adapter_config.json + adapter_model.safetensors
    except SafetensorError as e:  # safetensors reports a full disk as its own error: make it an OSError
        raise OSError(errno.EIO, str(e).splitlines()[0], str(folder / ADAPTER_WEIGHTS)) from None


def save_adapter(out: Path, model) -> Path:
    """OUTPUT_DIR/adapter (the final adapter), replaced whole: built in adapter.tmp, then renamed."""
    final, tmp = Path(out) / "adapter", Path(out) / "adapter.tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        _save_adapter_files(model, tmp)
        shutil.rmtree(final, ignore_errors=True)
        os.replace(tmp, final)
    except OSError:  # a full disk: give the space of the half-written copy back
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return final


def save_checkpoint(out: Path, model, optimizer, state: dict, scaler=None) -> Path:
    """OUTPUT_DIR/checkpoint (adapter, trainer.pt, state.json), built in checkpoint.tmp and swapped in
    by renames (the previous one survives as checkpoint.old until the new one is in place). scaler: fp16's
    dynamic loss scale (a GradScaler), resumed where it stood."""
    if any(p.requires_grad and not torch.isfinite(p).all() for p in model.parameters()):
        raise RuntimeError("refusing to checkpoint non-finite adapter weights")
    out = Path(out)
    final, tmp, old = out / CHECKPOINT, out / TMP, out / OLD
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        tmp.mkdir(parents=True)
        _save_adapter_files(model, tmp / "adapter")
        buf = io.BytesIO()  # torch.save to a file reports a full disk as a RuntimeError; open() as OSError
        torch.save({"optimizer": optimizer.state_dict(), "rng": rng_state(), "scaler": scaler.state_dict() if scaler else {}},
                   buf)
        _write_file(tmp / "trainer.pt", buf.getvalue())
        _write_file(tmp / "state.json", json.dumps(state, indent=1).encode())  # written last: marks the folder whole
        for f in [f for f in (tmp / "adapter").rglob("*") if f.is_file()]:  # save_pretrained's files
            with f.open("rb+") as fh:
                os.fsync(fh.fileno())
        _fsync_dir(tmp)
        if final.exists():
            shutil.rmtree(old, ignore_errors=True)
            os.replace(final, old)
        os.replace(tmp, final)
    except OSError:  # a full disk: give the space back; the previous checkpoint (or .old) is whole
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    _fsync_dir(out)
    shutil.rmtree(old, ignore_errors=True)
    return final


class Refused(ValueError):
    """A file that is not what its name claims (`str` names it and says why)."""


def _read_state(path: Path) -> dict:
    """state.json: a JSON object with a whole-number step >= 0 (elapsed_s and nonfinite_skips default to 0)."""
    try:
        state = json.loads(path.read_text())
    except (UnicodeDecodeError, json.JSONDecodeError):
        raise Refused(f"{path} is not JSON") from None
    if not isinstance(state, dict) or type(state.get("step")) is not int or state["step"] < 0:
        raise Refused(f"{path} is not a JSON object with a step (a whole number >= 0)")
    state = {"elapsed_s": 0.0, "nonfinite_skips": 0, **state}
    if not isinstance(state["elapsed_s"], (int, float)) or type(state["nonfinite_skips"]) is not int:
        raise Refused(f"{path}: elapsed_s must be a number and nonfinite_skips a whole number")
    return state


def load_trainer(path: Path) -> dict:
    """trainer.pt as {optimizer, rng, scaler}; a pickle naming any class or function is refused unrun."""
    try:
        names = set(torch.serialization.get_unsafe_globals_in_checkpoint(path))
    except Exception as e:  # noqa: BLE001 - not a torch.save zip file (a raw pickle, a torn or foreign file)
        raise Refused(f"{path} is not a readable torch.save file ({type(e).__name__})") from None
    if names:
        raise Refused(f"{path} holds pickled Python objects ({', '.join(sorted(names))}), not "
                      "plain tensors; minipods loads nothing from it")
    try:
        trainer = torch.load(path, weights_only=True, map_location="cpu")
        _check_trainer(trainer)
    except Exception as e:  # noqa: BLE001 - torn data, or not the shape a trainer state has
        raise Refused(f"{path} is not a readable minipods trainer state ({type(e).__name__}: {first_line(e)})") from None
    return trainer


def _check_trainer(trainer: dict) -> None:
    """The shape of a trainer state, so set_rng_state and the optimizer get what they expect."""
    rng, opt, scaler = trainer["rng"], trainer["optimizer"], trainer.get("scaler", {})  # no scaler: saved before fp16's
    if not (isinstance(opt, dict) and {"state", "param_groups"} <= set(opt)) or {type(v) for v in scaler.values()} - {int, float}:
        raise TypeError("optimizer state has no state/param_groups, or the loss-scaler state is not plain numbers")
    if not (isinstance(rng["torch"], torch.Tensor) and rng["torch"].dtype == torch.uint8):
        raise TypeError("torch RNG state is not a uint8 tensor")
    py, npy = rng["python"], rng["numpy"]
    ints = [py["version"], *py["internal"], *npy["key"], npy["pos"], npy["has_gauss"]]
    if not all(type(v) is int for v in ints) or len(npy["key"]) != 624 or not isinstance(npy["kind"], str):
        raise TypeError("Python/numpy RNG state is not plain whole numbers")
    gauss, cached = py["gauss_next"], npy["cached_gaussian"]
    if not (gauss is None or isinstance(gauss, float)) or not isinstance(cached, float):
        raise TypeError("RNG gaussian state is not a float")


def check_adapter(folder: Path) -> Path:
    """`folder`'s safetensors adapter weights (with adapter_config.json a JSON object), else Refused."""
    folder, weights = Path(folder), Path(folder) / ADAPTER_WEIGHTS
    if not weights.is_file():
        pickles = sorted(p.name for p in folder.glob("*") if p.suffix in (".bin", ".pt", ".pth", ".pkl", ".ckpt"))
        raise Refused(f"{folder} has no {ADAPTER_WEIGHTS}" + (f" (only {', '.join(pickles)}: pickle, which minipods "
                      "does not load)" if pickles else "") + "; save the adapter as safetensors "
                      "(peft's save_pretrained does by default) and pass that folder")
    from safetensors import safe_open
    try:
        with safe_open(str(weights), "pt") as f:  # checks the header and that the data fits the file
            f.keys()
    except Exception as e:  # noqa: BLE001 - SafetensorError, or a header that is not JSON
        raise Refused(f"{weights} is not a safetensors file ({first_line(e)}); "
                      "minipods loads adapter weights only from safetensors: save the adapter again") from None
    try:
        config = json.loads((folder / "adapter_config.json").read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        config = None
    if not isinstance(config, dict):
        raise Refused(f"{folder / 'adapter_config.json'} is not a JSON object; save the adapter again")
    return weights


def load_checkpoint(out: Path) -> dict | None:
    """The newest whole checkpoint {path, state, trainer, adapter}; None if none, RunError if none is readable."""
    from safetensors.torch import load_file
    out = Path(out)
    found = [out / name for name in (CHECKPOINT, OLD) if (out / name).is_dir()]
    # checkpoint.old can be the only whole one: a kill between the two renames of a save
    errors = []
    for ckpt in found:
        try:  # every part, or the checkpoint is not whole
            state, trainer = _read_state(ckpt / "state.json"), load_trainer(ckpt / "trainer.pt")
            adapter = load_file(str(check_adapter(ckpt / "adapter")))
            return {"path": ckpt, "state": state, "trainer": trainer, "adapter": adapter}
        except Exception as e:  # noqa: BLE001 - any unreadable part means "not whole"
            errors.append(str(e) if isinstance(e, Refused) else f"{ckpt}: {type(e).__name__}: {first_line(e)}")
    if errors:
        raise RunError(f"no whole checkpoint in {out} ({'; '.join(errors)}); nothing was taken from it: delete the "
                       "named checkpoint folder(s) to restart from step 1 with --resume, or use another --output-dir")
    return None
