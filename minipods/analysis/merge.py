"""Seed folders (a class's hand-ins) and whole studies merged into one study:
`python -m minipods.compare --merge DIR... --output-dir OUT` (docs/class_study.md).

A DIR is a seed folder (one folder per arm, as `compare --seed S` writes it) or a study (`compare --seeds`
or an earlier merge: its comparison.json lists the seeds). Before writing anything the merge refuses what
does not make one study: another design (results.fingerprint: every setting but the seed and the paths),
a seed twice, a seed missing an arm, an unfinished arm, a damaged metrics or evaluation file, a seed whose
arms ran on different machines (they are compared in wall-clock). OUT is then laid out as `compare
--seeds` writes a study (seed{s}/ARM without checkpoints, comparison.json, figures, summary), so the
summary is compare's over the same seeds, plus the machines and the seeds each ran.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

from minipods.analysis import plots, results
from minipods.checkpoint import RunError, prepare_output_dir

_META_KEYS = ("arms", "baseline", "preset", "overrides", "primary")  # what the merged comparison.json keeps


def _json(path: Path) -> dict:
    try:
        return json.loads(path.read_text()) if path.is_file() else {}
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise RunError(f"{path} is not valid JSON (a damaged file)") from None


def seed_folders(dirs: list) -> list[Path]:
    """The seed folders of DIR... (a study: its seed{s} folders; a seed folder: itself), in the given order."""
    out = []
    for d in map(Path, dirs):
        if seeds := _json(d / results.COMPARISON_FILE).get("seeds"):
            out += [d / f"seed{s}" for s in seeds]
        elif d.is_dir() and any((a / "config.json").is_file() for a in d.iterdir()):
            out.append(d)
        else:
            raise ValueError(f"{d}: neither a seed folder (one folder per arm, as compare writes it) nor a study")
    return out


def check_seed(folder: Path) -> dict:
    """One seed folder, read whole and checked: seed, meta (its comparison.json), dirs (arm -> folder), fingerprint."""
    meta = _json(folder / results.COMPARISON_FILE)
    arms = meta.get("arms") or sorted(a.name for a in folder.iterdir() if (a / "config.json").is_file())
    dirs, configs, machines = {}, {}, set()
    for a in arms:
        d = dirs[a] = folder / a
        if not (d / "config.json").is_file():
            raise ValueError(f"{folder} lacks arm {a} (no {a}/config.json): a seed needs every arm of the design")
        configs[a], done = _json(d / "config.json"), _json(d / results.DONE)
        if not done:
            raise ValueError(f"{d} has not finished (no {results.DONE}): run its compare command again to finish it")
        if (last := max((r.get("step", -1) for r in results.read_rows(d)), default=None)) != done.get("step"):
            raise RunError(f"{d}/metrics.jsonl ends at step {last} but {results.DONE} says {done.get('step')} (damaged)")
        machines.add((done.get("cpu"), done.get("threads"), done.get("host")))
    try:
        points = results.read_study({0: dirs})[0]
    except (KeyError, TypeError) as e:
        raise RunError(f"{folder}: a damaged evaluation file (a row without {e})") from None
    if bad := [a for a in arms if any(p.correct is not None and len(p.correct) != p.n for p in points.get(a, []))]:
        raise RunError(f"{folder / bad[0]}: an evaluation file holds fewer questions than metrics.jsonl says (damaged)")
    if len(seeds := {c.get("seed") for c in configs.values()}) != 1:
        raise ValueError(f"{folder}: its arms ran different seeds ({', '.join(sorted(map(str, seeds)))})")
    if len(machines) > 1:
        raise ValueError(f"{folder}: its arms ran on different machines ({', '.join(sorted(str(m[0]) for m in machines))}"
                         "); a seed's arms are compared in wall-clock, so run them on one")
    return {"seed": seeds.pop(), "meta": meta, "dirs": dirs, "fingerprint": results.fingerprint(configs), "folder": folder}


def check(dirs: list) -> dict[int, dict]:
    """seed -> check_seed of every seed folder of DIR...; ValueError (one line) where they are not one study."""
    by_seed: dict[int, dict] = {}
    for x in map(check_seed, seed_folders(dirs)):
        first = next(iter(by_seed.values()), x)
        if x["seed"] in by_seed:
            raise ValueError(f"seed {x['seed']} twice: {by_seed[x['seed']]['folder']} and {x['folder']}")
        if missing := [a for a in first["dirs"] if a not in x["dirs"]] or [a for a in x["dirs"] if a not in first["dirs"]]:
            raise ValueError(f"seed {x['seed']} ({x['folder']}) and seed {first['seed']} ({first['folder']}) differ in "
                             f"arm {missing[0]}: a seed missing an arm")
        if x["fingerprint"] != first["fingerprint"]:
            raise ValueError(f"{x['folder']} has another design than {first['folder']} (fingerprint {x['fingerprint']} vs "
                             f"{first['fingerprint']}: a setting other than the seed differs)")
        by_seed[x["seed"]] = x
    return dict(sorted(by_seed.items()))


def merge(dirs: list, out: str | Path, log=print) -> Path:
    """Check DIR... (check), then write the merged study into OUT (a new or empty folder) all at once."""
    by_seed, out = check(dirs), Path(out)
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise ValueError(f"{out} exists and is not an empty folder: merge into a new --output-dir")
    first = next(iter(by_seed.values()))
    meta = {"seeds": list(by_seed), **{k: first["meta"][k] for k in _META_KEYS if k in first["meta"]},
            "arms": list(first["dirs"]), "fingerprint": first["fingerprint"], "merged_from": [str(d) for d in dirs]}
    meta.get("overrides", {}).pop("seed", None)  # a student's --seed is not shared by the study
    tmp = Path(tempfile.mkdtemp(dir=prepare_output_dir(out.absolute().parent), prefix=f".{out.name}."))
    try:  # written aside and renamed: an interrupted merge leaves no half study
        for s, x in by_seed.items():
            for a, d in x["dirs"].items():
                shutil.copytree(d, tmp / f"seed{s}" / a, ignore=shutil.ignore_patterns("checkpoint*", ".lock"))
            for f in (f for f in x["folder"].iterdir() if f.is_file() and f.name != ".lock"):
                shutil.copy2(f, tmp / f"seed{s}" / f.name)  # the seed's own summary and figures
        (tmp / results.COMPARISON_FILE).write_text(json.dumps(meta, indent=1))
        plots.make(results.seed_dirs(tmp, meta), tmp, meta)
        os.replace(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    log(f"merged {len(by_seed)} seeds ({', '.join(map(str, by_seed))}) into {out}")
    return out
