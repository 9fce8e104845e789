"""A comparison over several seeds (`compare --seeds`): pooled paired differences, learning per seed,
means with 95% intervals across seeds, and the summary files.

    dirs = {0: {"grpo": Path("runs/c/seed0/grpo"), ...}, 1: {...}}   # seed -> arm -> run folder
    paired_against(dirs)      # pods_max_variance minus each other arm, final evaluations, pooled over seeds
    learning_by_seed(dirs)    # each arm's first vs final evaluation, per seed and pooled
    write_seed_summary(summarize_seeds(per_seed_rows), paired_against(dirs), out, seeds)

Arms of one seed see the same questions, so every comparison here is paired (Newcombe's paired score
interval and the exact McNemar p-value, minipods.analysis.stats.paired_difference); means across seeds carry a Student-t interval
(`mean_interval`). Built on minipods.analysis.results (one seed's numbers); no torch, no figures.
"""

from __future__ import annotations

import csv
import math
from pathlib import Path

from minipods.analysis.results import (BASELINE, PAIRED_ARM, TARGET_FRAC, change_of, final_eval, first_last_correct,
                                       fmt, lacks_target, matched_correct, paired_cols, paired_lines, summarize)
from minipods.analysis.stats import mean_interval, paired_difference
from minipods.analysis.wallclock import wallclock_lines


def paired_against(seed_dirs: dict[int, dict[str, Path]], arm: str = PAIRED_ARM) -> dict[str, dict]:
    """Other arm -> paired_difference(other's final evaluation, `arm`'s), b minus a = `arm` minus the
    other. seed_dirs: seed -> arm -> run folder. Arms of one seed are evaluated on the same questions;
    the pairs of all seeds are pooled (N counts (seed, question) pairs)."""
    out = {}
    others = [a for dirs in seed_dirs.values() for a in dirs if a != arm]
    for other in dict.fromkeys(others):
        xa, xb = [], []
        for dirs in seed_dirs.values():
            if arm in dirs and other in dirs:
                a, b = matched_correct(final_eval(dirs[other]), final_eval(dirs[arm]))
                xa += a
                xb += b
        out[other] = paired_difference(xa, xb)
    return out


def learning_by_seed(seed_dirs: dict[int, dict[str, Path]]) -> dict[str, dict]:
    """Does each arm learn? Arm -> {"per_seed": seed -> learning_change (None: under two
    evaluations), "pooled": paired_difference of first vs final evaluation over every (seed, question)
    pair}. seed_dirs: seed -> arm -> run folder."""
    out = {}
    for arm in dict.fromkeys(a for dirs in seed_dirs.values() for a in dirs):
        per, xa, xb = {}, [], []
        for s, dirs in seed_dirs.items():
            fl = first_last_correct(dirs[arm]) if arm in dirs else None
            per[s] = change_of(fl)
            if fl is not None:
                xa += fl[0]
                xb += fl[1]
        out[arm] = {"per_seed": per, "pooled": paired_difference(xa, xb) if xa else None}
    return out


SEED_METRICS = {"final_accuracy": (0.0, 1.0), "peak_accuracy": (0.0, 1.0), "time_to_target_s": (0.0, math.inf),
                "train_s": (0.0, math.inf), "mean_step_s": (0.0, math.inf)}


def summarize_seeds(per_seed: dict[int, dict[str, list[dict]]], baseline: str | None = BASELINE,
                    target_frac: float = TARGET_FRAC) -> list[dict]:
    """One row per arm: for each of SEED_METRICS the mean and 95% interval across seeds
    (`mean_interval`; each seed's target is 99% of that seed's baseline peak). A seed whose arm
    never reached the target is left out of that mean (k of `of` seeds say how many reached it); a
    seed whose baseline met its target at 0 s (never beat its step-0 evaluation) has no target and
    is left out of time_to_target_s altogether (as in wallclock.time_to_target)."""
    per = {s: {r["arm"]: r for r in summarize(runs, baseline, target_frac)} for s, runs in per_seed.items()}
    arms = list(dict.fromkeys(a for runs in per_seed.values() for a in runs))
    no_target = {s for s, p in per.items() if baseline in p and lacks_target(p[baseline]["time_to_target_s"])}

    def values(a, k):
        return [p[a][k] for s, p in per.items() if a in p and not (k == "time_to_target_s" and s in no_target)]

    return [{"arm": a, "seeds": sum(a in p for p in per.values()),
             **{k: mean_interval(values(a, k), b) for k, b in SEED_METRICS.items()}} for a in arms]


def _change(p: dict | None) -> str:
    if not p or p.get("diff") is None:
        return "-"
    lo, hi = p["ci95"]
    return (f"{100 * p['acc_a']:.1f} → {100 * p['acc_b']:.1f} ({100 * p['diff']:+.1f} "
            f"[{100 * lo:+.1f}, {100 * hi:+.1f}])")


def _ci(m: dict, pct: bool = True) -> str:
    """A summary.md cell of a mean_interval: 'mean [lo, hi]' (in % when pct), '(k/of seeds)' when some lack it."""
    if m["mean"] is None:
        return "-"
    k = 100 if pct else 1
    body = f"{k * m['mean']:.1f}" + (f" [{k * m['lo']:.1f}, {k * m['hi']:.1f}]" if m["lo"] is not None else "")
    return body + (f" ({m['k']}/{m['of']} seeds)" if m["k"] < m["of"] else "")


def _seed_csv(rows: list[dict], paired: dict[str, dict], out_dir: Path, configs: dict[str, dict],
              learning: dict[str, dict], wall: tuple[dict, dict]) -> tuple[list[dict], Path]:
    """summary.csv of a several-seed comparison; returns its rows (one flat dict per arm) and its path."""
    cols = ["arm", "n", "m", "seeds"] + [f"{k}_{x}" for k in SEED_METRICS for x in ("mean", "lo", "hi")] + \
        ["time_to_target_reached", "speedup", "speedup_lo", "speedup_hi", "paired_diff", "paired_lo", "paired_hi",
         "paired_n", "paired_p", "equal_time_diff", "equal_time_lo", "equal_time_hi", "equal_time_n", "equal_time_p",
         "learn_diff", "learn_lo", "learn_hi", "learn_n", "learn_p"]
    flat = []
    for r in rows:
        sp = (wall[0].get(r["arm"]) or {}).get("speedup") or {}
        f = {"arm": r["arm"], "seeds": r["seeds"], "time_to_target_reached": r["time_to_target_s"]["k"],
             "speedup": sp.get("ratio"), "speedup_lo": sp.get("lo"), "speedup_hi": sp.get("hi"),
             **{k: configs.get(r["arm"], {}).get(k) for k in ("n", "m")}, **paired_cols(paired.get(r["arm"])),
             **paired_cols(wall[1].get(r["arm"]), prefix="equal_time"),
             **paired_cols((learning.get(r["arm"]) or {}).get("pooled"), prefix="learn")}
        f.update({f"{k}_{x}": r[k][x] for k in SEED_METRICS for x in ("mean", "lo", "hi")})
        flat.append(f)
    csv_path = out_dir / "summary.csv"
    with csv_path.open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=cols)
        w.writeheader()
        for f in flat:
            w.writerow({k: ("" if f.get(k) is None else f[k]) for k in cols})
    return flat, csv_path


def write_seed_summary(rows: list[dict], paired: dict[str, dict], out_dir: str | Path, seeds: list[int],
                       configs: dict[str, dict] | None = None, learning: dict[str, dict] | None = None,
                       wall: tuple[dict, dict] | None = None) -> tuple[Path, Path]:
    """summary.csv (mean, lo, hi per metric; paired columns; speedup* and equal_time_* from `wall` =
    (wallclock.time_to_target, wallclock.equal_time); learn_* = pooled first-vs-final change) and
    summary.md of a several-seed comparison."""
    out_dir, configs, learning, wall = Path(out_dir), configs or {}, learning or {}, wall or ({}, {})
    flat, csv_path = _seed_csv(rows, paired, out_dir, configs, learning, wall)
    lines = ["# minipods comparison over seeds", "",
             (f"Seeds {', '.join(map(str, seeds))}: each arm once per seed; the arms of one seed see the same "
              "questions in the same order. Mean [95% t-interval across seeds]; accuracies in %, times in "
              "training seconds (evaluation excluded). Target: 99% of that seed's `grpo` peak."), "",
             "| arm | n | m | final acc | peak acc | time to target (s) | train s | s/step |",
             "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for r, f in zip(rows, flat):
        lines.append(f"| {r['arm']} | {fmt(f['n'])} | {fmt(f['m'])} | {_ci(r['final_accuracy'])} | "
                     f"{_ci(r['peak_accuracy'])} | {_ci(r['time_to_target_s'], pct=False)} | "
                     f"{_ci(r['train_s'], pct=False)} | {_ci(r['mean_step_s'], pct=False)} |")
    lines += [""] + (wallclock_lines(*wall) if wall[0] else []) + paired_lines(paired)
    if learning:
        lines += [("Learning: each arm's first (step 0) vs final evaluation on the same questions, "
                   "accuracy % and change in points [paired 95% CI]; pooled = all (seed, question) pairs:"), "",
                  "| arm | " + " | ".join(f"seed {s}" for s in seeds) + " | pooled |",
                  "|---|" + "---:|" * (len(seeds) + 1)]
        for a, ln in learning.items():
            lines.append(f"| {a} | " + " | ".join(_change(ln["per_seed"].get(s)) for s in seeds) +
                         f" | {_change(ln['pooled'])} |")
        lines.append("")
    md_path = out_dir / "summary.md"
    md_path.write_text("\n".join(lines))
    return md_path, csv_path
