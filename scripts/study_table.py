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

ARMS = ("grpo", "pods_max_variance", "pods_random")


def arm_row(seed: int, arm: str, run: Path) -> str:
    rows = [json.loads(line) for line in open(run / "metrics.jsonl")]
    evals = [r for r in rows if "eval_accuracy" in r]          # step 0 first, then one per grid point
    steps = [r for r in rows if "zero_std_frac" in r]
    done = json.loads((run / "DONE").read_text())
    cells = [f"{100 * evals[0]['eval_accuracy']:.0f}"]
    cells += [f"{100 * e['eval_accuracy']:.0f} ({e['step']})" for e in evals[1:]]
    silent = 100 * sum(r["zero_std_frac"] for r in steps) / len(steps)
    eval_s = sum(e["eval_s"] for e in evals)
    return (f"| {seed} | `{arm}` | " + " | ".join(cells)
            + f" | {done['step']} | {silent:.0f}% | {done['wall_s_this_call']:,.0f} s ({eval_s:,.0f} s) |")


def table(study: Path) -> list[str]:
    """The rows of every seed whose three arms have finished, in seed order."""
    seeds = sorted(int(p.name[4:]) for p in study.glob("seed*") if p.name[4:].isdigit())
    return [arm_row(s, arm, study / f"seed{s}" / arm) for s in seeds
            if all((study / f"seed{s}" / a / "DONE").exists() for a in ARMS) for arm in ARMS]


if __name__ == "__main__":
    if len(sys.argv) != 2 or not Path(sys.argv[1]).is_dir():
        sys.exit("usage: python scripts/study_table.py STUDY_DIR  (a compare --output-dir with seedS/ARM/ folders)")
    print("\n".join(table(Path(sys.argv[1]))))
