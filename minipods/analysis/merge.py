"""`python -m minipods.compare --merge DIR... --output-dir OUT`: seed folders (`compare --seed S`, a
student's hand-in) and studies (`compare --seeds`, an earlier merge) as one study, laid out and summarised
as `compare --seeds` does. Refused before anything is written: another design (results.fingerprint), a
seed twice, a missing or unfinished arm, a damaged file, a seed's arms from two machines (docs/class_study.md).
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

from minipods.analysis import plots, results
from minipods.checkpoint import RunError, prepare_output_dir


def seed_folders(dirs: list) -> list[Path]:
    """The seed folders of DIR... (a study: its seed{s} folders; a seed folder: itself), in the given order."""
    out = []
    for d in map(Path, dirs):
        if seeds := results.read_json(d / results.COMPARISON_FILE).get("seeds"):
            out += [d / f"seed{s}" for s in seeds]
        elif d.is_dir() and any((a / "config.json").is_file() for a in d.iterdir()):
            out.append(d)
        else:
            raise ValueError(f"{d}: neither a seed folder (one folder per arm, as compare writes it) nor a study")
    return out


def check_seed(folder: Path) -> dict:
    """One seed folder, read whole and checked: seed, meta (comparison.json), dirs (arm -> folder), fingerprint."""
    meta = results.read_json(folder / results.COMPARISON_FILE)
    dirs = {a: folder / a for a in meta.get("arms") or sorted(a.name for a in folder.iterdir() if (a / "config.json").is_file())}
    configs, machines = {}, set()
    for a, d in dirs.items():
        if not (d / "config.json").is_file():
            raise ValueError(f"{folder} lacks arm {a} (no {a}/config.json): a seed needs every arm of the design")
        configs[a], done = results.read_config(d), results.read_done(d)
        if not done:
            raise ValueError(f"{d} has not finished (no {results.DONE}): run its compare command again to finish it")
        if (last := max((r.get("step", -1) for r in results.read_rows(d)), default=None)) != done.get("step"):
            raise RunError(f"{d}/metrics.jsonl ends at step {last} but {results.DONE} says {done.get('step')} (damaged)")
        machines.add((done.get("cpu"), done.get("threads"), done.get("host")))
    try:  # every metrics row and evaluation file, as the summary will read them
        points = results.read_study({0: dirs})[0]
    except (KeyError, TypeError) as e:
        raise RunError(f"{folder}: a damaged evaluation file (a row without {e})") from None
    if bad := [a for a, pts in points.items() if any(p.correct is not None and len(p.correct) != p.n for p in pts)]:
        raise RunError(f"{folder / bad[0]}: an evaluation file holds fewer questions than metrics.jsonl says (damaged)")
    if len(seeds := {c.get("seed") for c in configs.values()}) != 1:
        raise ValueError(f"{folder}: its arms ran different seeds ({', '.join(sorted(map(str, seeds)))})")
    if len(machines) > 1:
        raise ValueError(f"{folder}: its arms ran on different machines ({', '.join(sorted(str(m[0]) for m in machines))}"
                         "); a seed's arms are compared in wall-clock, so run them on one")
    return {"seed": seeds.pop(), "meta": meta, "dirs": dirs, "fingerprint": results.fingerprint(configs), "folder": folder}


def check(dirs: list) -> dict[int, dict]:
    """seed -> check_seed of every seed folder of DIR..., in seed order; ValueError where they are not one study."""
    by_seed: dict[int, dict] = {}
    for x in map(check_seed, seed_folders(dirs)):
        first = next(iter(by_seed.values()), x)
        if x["seed"] in by_seed:
            raise ValueError(f"seed {x['seed']} twice: {by_seed[x['seed']]['folder']} and {x['folder']}")
        if odd := [a for a in first["dirs"] if a not in x["dirs"]] or [a for a in x["dirs"] if a not in first["dirs"]]:
            raise ValueError(f"seed {x['seed']} ({x['folder']}) and seed {first['seed']} ({first['folder']}) differ in "
                             f"arm {odd[0]}: a seed missing an arm")
        if x["fingerprint"] != first["fingerprint"]:
            raise ValueError(f"{x['folder']} has another design than {first['folder']} (fingerprint {x['fingerprint']} vs "
                             f"{first['fingerprint']}: a setting other than the seed differs)")
        by_seed[x["seed"]] = x
    return dict(sorted(by_seed.items()))


def merge(dirs: list, out: str | Path, log=print) -> Path:
    """check(DIR...), then OUT (new or empty) written aside and renamed: an interrupted merge leaves nothing."""
    by_seed, out = check(dirs), Path(out)
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise ValueError(f"{out} exists and is not an empty folder: merge into a new --output-dir")
    first = next(iter(by_seed.values()))
    meta = {"seeds": list(by_seed), **{k: v for k, v in first["meta"].items() if k in ("baseline", "preset", "primary")},
            "arms": list(first["dirs"]), "fingerprint": first["fingerprint"], "merged_from": list(map(str, dirs))}
    tmp = Path(tempfile.mkdtemp(dir=prepare_output_dir(out.absolute().parent), prefix=f".{out.name}."))
    try:
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
