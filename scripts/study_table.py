"""The per-seed table of docs/results.md ("The study as run"), computed from a study's run folders.

    python scripts/study_table.py studies/laptop10

One row per finished (seed, arm): greedy accuracy (%) at each evaluation of the time grid with the
step it was taken at, the steps the budget bought, the mean fraction of all-silent groups (every
rollout of the prompt scored the same, so its advantage is zero) over the run's steps, and the arm's
wall time with its evaluation time. Seeds with an unfinished arm are left out (a study in progress).
"""
import json
import sys
from pathlib import Path

from minipods.analysis import results


def arm_row(seed: int, arm: str, run: Path) -> str:
    rows = results.read_rows(run)                               # the run's metrics, as the summary reads them
    evals = [r for r in rows if "eval_accuracy" in r]          # step 0 first, then one per grid point
    done = json.loads((run / "DONE").read_text())
    cells = [f"{100 * evals[0]['eval_accuracy']:.0f}"]
    cells += [f"{100 * e['eval_accuracy']:.0f} ({e['step']})" for e in evals[1:]]
    silent = 100 * results.summarize({arm: rows})[0]["zero_std_frac"]  # the summary's zero-std groups
    eval_s = sum(e["eval_s"] for e in evals)
    return (f"| {seed} | `{arm}` | " + " | ".join(cells)
            + f" | {done['step']} | {silent:.0f}% | {done['wall_s_this_call']:,.0f} s ({eval_s:,.0f} s) |")


def table(study: Path) -> list[str]:
    """The rows of every seed (of the study's comparison.json) whose arms have all finished, in seed order."""
    meta = json.loads((study / results.COMPARISON_FILE).read_text())
    return [arm_row(s, arm, run) for s, arms in sorted(results.seed_dirs(study, meta).items())
            if all((study / f"seed{s}" / a / "DONE").exists() for a in meta["arms"]) for arm, run in arms.items()]


if __name__ == "__main__":
    if len(sys.argv) != 2 or not (Path(sys.argv[1]) / results.COMPARISON_FILE).is_file():
        sys.exit(f"usage: python scripts/study_table.py STUDY_DIR  (a compare --output-dir with {results.COMPARISON_FILE})")
    print("\n".join(table(Path(sys.argv[1]))))
