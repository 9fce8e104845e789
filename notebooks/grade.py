"""The grader (issue 59): `python notebooks/exercises.py --grade SUBMISSION... --out grades.csv [--seed S]
[--timeout SECONDS] [--jobs J]`.

A submission is a student's notebook (.ipynb; the student is the file's name) or a folder of them (the student
is the folder's name). For each notebook it finds the exercise cells (the cells from `from exercises import
check` to `check("NN.k", ...)`, wherever the lesson put them) and runs only those, in a separate process: the
student's code never runs in the grader's. One process (started once: torch, exercises.py, the checks warmed)
forks a child per student; the child runs the student's exercises one after another, each its cells then
exercises.py's own check (`_verdict`), and writes one line per exercise. A check that gives no line within
`--timeout` seconds is a fail that says "timed out"; the child is killed and a new one goes on with the next
exercise. The checks' random inputs come from `--seed` (MINIPODS_EXERCISE_SEED: inputs the class has not seen).

Out: one CSV row per (student, exercise): pass, fail (with the check's hint), not answered, or error (the
student's cell raised, or the process died); a summary per exercise on stdout (passes, the most common hint).
A file that is not a notebook, or a notebook without exercise cells, is reported in one line (and one CSV row);
the rest are graded. The grader runs student code: run it in a container or sandbox, never on a machine whose
files matter (docs/teaching.md, "Handing out and grading").
"""

from __future__ import annotations

import collections
import csv
import io
import json
import os
import re
import secrets
import signal
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

NB = Path(__file__).resolve().parent
FIELDS = ("student", "notebook", "exercise", "kind", "result", "detail", "seconds", "seed")
USAGE = "--grade SUBMISSION... --out CSV [--seed S] [--timeout SECONDS] [--jobs J]"


# ---------------------------------------------------------------- reading submissions (the grader's process)
def _notebooks(path: Path) -> tuple[str, list[Path]]:
    if path.is_dir():
        return path.name, sorted(p for p in path.glob("*.ipynb") if not p.name.startswith("."))
    return path.stem, [path]


def read_submission(path: Path, release, exercises) -> tuple[str, list[dict], list[dict], list[str]]:
    """(student, jobs, missing, problems): jobs = {id, notebook, cells} found; missing = exercise rows of submitted
    notebooks whose cells are gone; problems = one line per unreadable or foreign notebook."""
    student, files = _notebooks(path)
    sizes = {ex.id: len(ex.cells) for ex in exercises.EXERCISES.values()}
    jobs, problems, found_nbs = [], [], {}
    if not files:
        problems.append(f"{student}: no .ipynb notebook in {path}")
    for f in files:
        try:
            cells = json.loads(f.read_text(encoding="utf-8"))["cells"]
            blocks = release.exercise_blocks(cells, sizes)
        except (OSError, UnicodeDecodeError, ValueError, KeyError, TypeError, AttributeError) as e:
            problems.append(f"{student}: {f.name}: not a notebook ({type(e).__name__}: {str(e)[:80]})")
            continue
        if not blocks:
            problems.append(f"{student}: {f.name}: no exercise cells (a notebook of another course?)")
        for ex_id, idx in blocks.items():
            if ex_id not in {j["id"] for j in jobs}:
                jobs.append({"id": ex_id, "notebook": f.name, "cells": [release.text(cells[i]) for i in idx]})
                found_nbs.setdefault(ex_id[:2], f.name)
    have = {j["id"] for j in jobs}
    missing = [{"id": ex.id, "notebook": found_nbs[ex.notebook], "result": "not answered",
                "detail": "its cells are not in the notebook"}
               for ex in exercises.EXERCISES.values() if ex.notebook in found_nbs and ex.id not in have]
    order = list(exercises.EXERCISES)
    return student, sorted(jobs, key=lambda j: order.index(j["id"])), missing, problems


# ---------------------------------------------------------------- the forking server and its children
def _python(src: str) -> str:
    """A cell as plain Python: IPython magics and shell lines (%..., !...) become comments."""
    return "\n".join("# " + ln if ln.lstrip()[:1] in ("%", "!") else ln for ln in src.splitlines())


def grade_one(job: dict, E, verdict) -> tuple[str, str]:
    """Run one exercise's cells as the student left them, then exercises.py's check (`verdict`, taken before any
    student code ran) on what they gave `check`."""
    ex = E.EXERCISES[job["id"]]
    given = {}
    E.check = lambda ex_id, answer, *a, **k: given.__setitem__(ex_id, answer)  # `from exercises import check` gets it
    ns = {"__name__": "__main__"}
    for k, src in enumerate(job["cells"], 1):
        try:
            exec(compile(_python(src), f"<{ex.id} cell {k}>", "exec"), ns)  # noqa: S102 (the student's code: a child)
        except BaseException as e:  # noqa: BLE001 (SystemExit too: the student's cell, reported)
            return "error", f"cell {k} of {len(job['cells'])} raised {type(e).__name__}: {str(e)[:200]}"
    if ex.id not in given and ex.name not in ns:
        return "error", f'check("{ex.id}", ...) never ran and the cells define no `{ex.name}`'
    try:
        ok, line = verdict(ex.id, given.get(ex.id, ns.get(ex.name)))
    except Exception as e:  # noqa: BLE001
        return "error", f"the check raised {type(e).__name__}: {str(e)[:200]}"
    return {True: "pass", False: "fail", None: "not answered"}[ok], line


def _child(req: dict, E) -> None:
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):  # the student's prints go nowhere, and never into the server's pipe
        os.dup2(null, fd)
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    os.chdir(req["cwd"])
    if hasattr(E, "GRADING_SEED"):
        E.GRADING_SEED = int(req["seed"])
    verdict = E._verdict
    with open(req["results"], "a", encoding="utf-8") as out:
        for job in req["jobs"]:
            t0 = time.perf_counter()
            result, detail = grade_one(job, E, verdict)
            out.write(json.dumps({"id": job["id"], "result": result, "detail": detail,
                                  "seconds": round(time.perf_counter() - t0, 2)}) + "\n")
            out.flush()
        out.write('{"done": true}\n')


def serve() -> None:
    """`python notebooks/grade.py --serve`: import and warm every check once, then fork a child per request line."""
    import contextlib

    import exercises as E
    import torch
    torch.set_num_threads(1)
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        for ex in E.EXERCISES.values():  # the imports and data loads of every exercise's cells and check
            with contextlib.suppress(Exception):
                E.run_cells(ex)
                E._verdict(ex.id, E.stub_answer(ex) if ex.kind == "implement" else 0.5)
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # children are reaped by the kernel
    print("ready", flush=True)
    for line in sys.stdin:
        req = json.loads(line)
        pid = os.fork()
        if pid == 0:
            try:
                _child(req, E)
            finally:
                os._exit(0)
        print(pid, flush=True)


class Server:
    """The forking server as seen from the grader: start(), fork(request) -> pid, close()."""

    def __init__(self, seed: int, workdir: Path):
        env = dict(os.environ, MINIPODS_EXERCISE_SEED=str(seed), OMP_NUM_THREADS="1", MKL_NUM_THREADS="1",
                   PYTHONPATH=os.pathsep.join([str(NB), str(NB.parent), os.environ.get("PYTHONPATH", "")]))
        self.proc = subprocess.Popen([sys.executable, str(NB / "grade.py"), "--serve"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=workdir)
        self.lock = threading.Lock()
        if self.proc.stdout.readline().strip() != "ready":
            err = self.proc.communicate(timeout=30)[1].strip().splitlines()
            raise RuntimeError(f"the grading process did not start: {err[-1] if err else 'no message'}")

    def fork(self, req: dict) -> int:
        with self.lock:
            try:
                self.proc.stdin.write(json.dumps(req) + "\n")
                self.proc.stdin.flush()
                return int(self.proc.stdout.readline())
            except (OSError, ValueError):
                raise RuntimeError(f"the grading server stopped (exit code {self.proc.poll()})") from None

    def close(self) -> None:
        self.proc.stdin.close()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def grade_student(server: Server, jobs: list[dict], seed: int, timeout: float, tmp: Path) -> dict[str, dict]:
    """id -> result record for one student's jobs; a check silent for `timeout` s is killed and recorded."""
    done: dict[str, dict] = {}
    pending, rounds = list(jobs), 0
    while pending:
        rounds += 1
        results = tmp / f"results-{rounds}.jsonl"
        results.touch()
        pid = server.fork({"jobs": pending, "results": str(results), "cwd": str(tmp), "seed": seed})
        got, last, finished = 0, time.monotonic(), False
        while not finished:
            alive = _alive(pid)  # before reading: a child that wrote its last line and exited is not "died"
            lines = [json.loads(x) for x in results.read_text(encoding="utf-8").split("\n")[:-1]]
            for rec in lines[got:]:
                finished = finished or rec.get("done", False)
                if "id" in rec:
                    done[rec["id"]], last = rec, time.monotonic()
            got = len(lines)
            if finished:
                break
            current = pending[sum("id" in r for r in lines)]
            if time.monotonic() - last > timeout or not alive:
                hung = alive
                if hung:
                    os.kill(pid, signal.SIGKILL)
                done[current["id"]] = {"id": current["id"], "seconds": round(time.monotonic() - last, 1),
                                       **({"result": "fail", "detail": f"timed out after {timeout:g} s (an endless "
                                                                         "loop, or far too slow)"} if hung else
                                          {"result": "error", "detail": "the process died while checking it "
                                                                        "(os._exit, a crash, or out of memory)"})}
                break
            time.sleep(0.02)
        pending = [j for j in pending if j["id"] not in done]
    return done


# ---------------------------------------------------------------- the command
def _hint(detail: str) -> str:
    return detail.split("Hint: ", 1)[1] if "Hint: " in detail else detail


def summary(rows: list[dict], exercises) -> list[str]:
    """One line per exercise: passes of the students graded on it, the other results, the most common hint."""
    out = [f"{'exercise':9s}{'kind':10s}{'pass':>7s}{'fail':>6s}{'n/a':>5s}{'err':>5s}  most common hint (fails)"]
    for ex in exercises.EXERCISES.values():
        mine = [r for r in rows if r["exercise"] == ex.id]
        if not mine:
            continue
        n = collections.Counter(r["result"] for r in mine)
        hints = collections.Counter()
        first = {}
        for r in mine:
            if r["result"] == "fail":
                key = re.sub(r"-?\d+(?:\.\d+)?(?:e[-+]?\d+)?", "#", _hint(r["detail"]))[:80]
                hints[key] += 1
                first.setdefault(key, _hint(r["detail"]))
        top = hints.most_common(1)
        said = f"{top[0][1]}x {first[top[0][0]]}" if top else ""
        said = said if len(said) <= 72 else said[:69] + "..."
        out.append(f"{ex.id:9s}{ex.kind:10s}{n['pass']:>4d}/{len(mine):<2d}{n['fail']:>6d}{n['not answered']:>5d}"
                   f"{n['error']:>5d}  {said}")
    return out


def grade(paths: list[Path], out: Path, seed: int, timeout: float, jobs: int, exercises) -> tuple[list[dict], list[str]]:
    """Grade the submissions into `out` (CSV): (rows, problem lines)."""
    import importlib.util
    spec = importlib.util.spec_from_file_location("exercises_release", NB / "release.py")
    spec.loader.exec_module(release := importlib.util.module_from_spec(spec))
    subs = [read_submission(p, release, exercises) for p in paths]
    problems = [line for *_, lines in subs for line in lines]
    rows = [{"student": s, "notebook": "", "exercise": "", "kind": "", "result": "error", "detail": line,
             "seconds": "", "seed": seed} for s, *_, lines in subs for line in lines]
    kinds = {ex.id: ex.kind for ex in exercises.EXERCISES.values()}
    with tempfile.TemporaryDirectory(prefix="minipods-grade-") as tmp:
        server = Server(seed, Path(tmp))
        try:
            def one(i):
                work = Path(tmp) / f"student-{i}"
                work.mkdir()
                return grade_student(server, subs[i][1], seed, timeout, work)
            with ThreadPoolExecutor(max(1, jobs)) as pool:
                graded = list(pool.map(one, range(len(subs))))
        finally:
            server.close()
    for (student, found, missing, _), res in zip(subs, graded):
        nb_of = {j["id"]: j["notebook"] for j in found}
        for rec in sorted([*res.values(), *missing], key=lambda r: list(kinds).index(r["id"])):
            rows.append({"student": student, "notebook": nb_of.get(rec["id"], rec.get("notebook", "")),
                         "exercise": rec["id"], "kind": kinds[rec["id"]], "result": rec["result"],
                         "detail": rec["detail"], "seconds": rec.get("seconds", ""), "seed": seed})
    with open(out, "w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, FIELDS)
        w.writeheader()
        w.writerows(rows)
    return rows, problems


def _options(args: list[str]) -> tuple[list[Path], dict]:
    """SUBMISSION... and the options; ValueError with the line to print on bad input."""
    opts, paths, i = {"--out": None, "--seed": None, "--timeout": "10", "--jobs": str(os.cpu_count() or 1)}, [], 0
    while i < len(args):
        if args[i] in opts:
            if i + 1 >= len(args):
                raise ValueError(f"{args[i]} needs a value")
            opts[args[i]], i = args[i + 1], i + 2
        elif args[i].startswith("-"):
            raise ValueError(f"unknown option {args[i]} (usage: {USAGE})")
        else:
            paths.append(Path(args[i]))
            i += 1
    if not paths:
        raise ValueError(f"no submission given (usage: {USAGE})")
    if opts["--out"] is None:
        raise ValueError("--out CSV is required (where the grades go)")
    for p in paths:
        if not p.exists():
            raise ValueError(f"submission {p} does not exist")
    out = Path(opts["--out"])
    if out.is_dir() or not out.parent.is_dir():
        raise ValueError(f"--out {out}: not a file in an existing folder")
    try:
        seed = int(opts["--seed"]) if opts["--seed"] is not None else 1 + secrets.randbelow(10 ** 6)
        timeout, jobs = float(opts["--timeout"]), int(opts["--jobs"])
    except ValueError:
        raise ValueError("--seed and --jobs take integers, --timeout a number of seconds") from None
    if seed < 0 or not timeout > 0 or jobs < 1:
        raise ValueError("--seed must be >= 0, --timeout > 0 and --jobs >= 1")
    return paths, {"out": out, "seed": seed, "timeout": timeout, "jobs": jobs}


def main(args: list[str], exercises) -> int:
    try:
        paths, o = _options(args)
    except ValueError as e:
        print(f"notebooks/exercises.py: error: {e}", file=sys.stderr)
        return 2
    t0 = time.perf_counter()
    try:
        rows, problems = grade(paths, o["out"], o["seed"], o["timeout"], o["jobs"], exercises)
    except RuntimeError as e:
        print(f"notebooks/exercises.py: error: {e}", file=sys.stderr)
        return 1
    students = len({r["student"] for r in rows})
    print(f"graded {students} submissions under seed {o['seed']} ({o['timeout']:g} s per check) in "
          f"{time.perf_counter() - t0:.1f} s: {o['out']}")
    print("\n".join(summary(rows, exercises)))
    for line in problems:
        print(f"not graded: {line}")
    return 0


if __name__ == "__main__":
    if sys.argv[1:] != ["--serve"]:
        print(f"notebooks/grade.py: error: run it as python notebooks/exercises.py {USAGE}", file=sys.stderr)
        sys.exit(2)
    serve()
