"""The paper's question over seeds: does an arm reach GRPO's accuracy sooner in wall-clock time?

Paper (Xu et al., TMLR 2026, Figure 1 and Section 5): GRPO-PODS reaches vanilla GRPO's peak test
accuracy 1.7-2x sooner. Per seed s of a comparison (arms of one seed see the same questions):

  * target_s = 99% of `grpo`'s peak accuracy in seed s; t(arm, s) = the arm's training seconds
    (evaluation excluded) at its first evaluation at or above target_s; the speed-up of an arm is
    mean_s t(grpo, s) / mean_s t(arm, s) over the seeds where both reached the target, with a
    percentile bootstrap 95% interval over those seeds (`stats.bootstrap_ratio`); seeds where the
    arm never reached the target are counted, not hidden. A seed where `grpo` never beat its own
    step-0 evaluation (the untrained model already meets the target, so every arm "reaches" it at
    0 s) has no target: it cannot say which arm is sooner, and is counted apart, not as reached;
  * accuracy at equal wall-clock: the arm's last evaluation at or before `grpo`'s total training
    time T_s, against `grpo`'s final evaluation, on the same questions, pooled over (seed, question)
    pairs (`stats.paired_difference`: Newcombe's interval, McNemar's p).
"""

from __future__ import annotations

from pathlib import Path

from minipods.analysis.results import (BASELINE, TARGET_FRAC, eval_points, final_eval, lacks_target, matched_correct,
                                       read_eval, read_rows, time_to_reach, training_rows)
from minipods.analysis.stats import bootstrap_ratio, paired_difference


def eval_step_at(rows: list[dict], t: float) -> int | None:
    """The step of the last evaluation at or before `t` training seconds (None: none that early)."""
    best = None
    for r in sorted((r for r in rows if r.get("eval_accuracy") is not None), key=lambda r: r.get("elapsed_s", 0.0)):
        if float(r.get("elapsed_s", 0.0)) <= t * (1 + 1e-9) + 1e-9:
            best = int(r["step"])
    return best


def _seed_times(dirs: dict[str, Path], baseline: str, target_frac: float) -> dict[str, float | None]:
    """Arm -> training seconds to the seed's target (None: not reached, or no target)."""
    rows = {a: read_rows(d) for a, d in dirs.items()}
    peak = max((acc for _, acc, _ in eval_points(rows[baseline])), default=None)
    if peak is None or peak <= 0:
        return {a: None for a in dirs}
    return {a: time_to_reach(r, target_frac * peak) for a, r in rows.items()}


def time_to_target(seed_dirs: dict[int, dict[str, Path]], baseline: str = BASELINE,
                   target_frac: float = TARGET_FRAC, reps: int = 2000) -> dict[str, dict]:
    """Arm -> {"per_seed": seed -> seconds or None, "reached": k, "of": seeds with the arm, the
    baseline and a target, "no_target": seeds where the baseline's step-0 evaluation already met the
    target (left out of the rest), "speedup": bootstrap_ratio of the baseline's mean time over the
    arm's (seeds where both reached)}. seed_dirs: seed -> arm -> run folder."""
    times = {s: _seed_times(d, baseline, target_frac) for s, d in seed_dirs.items() if baseline in d}
    no_target = sorted(s for s, t in times.items() if lacks_target(t[baseline]))
    out = {}
    for arm in dict.fromkeys(a for d in seed_dirs.values() for a in d):
        per = {s: t[arm] for s, t in times.items() if arm in t and s not in no_target}
        both = [s for s, v in per.items() if v is not None and times[s][baseline] is not None]
        out[arm] = {"per_seed": per, "reached": sum(v is not None for v in per.values()), "of": len(per),
                    "no_target": [s for s in no_target if arm in times[s]],
                    "speedup": bootstrap_ratio([times[s][baseline] for s in both], [per[s] for s in both], reps=reps)}
    return out


def equal_time(seed_dirs: dict[int, dict[str, Path]], baseline: str = BASELINE) -> dict[str, dict]:
    """Arm -> paired_difference(baseline's final evaluation, the arm's evaluation at the baseline's
    total training time), pooled over (seed, question) pairs: the arm minus the baseline."""
    out = {}
    for arm in dict.fromkeys(a for d in seed_dirs.values() for a in d if a != baseline):
        xa, xb = [], []
        for dirs in seed_dirs.values():
            if arm not in dirs or baseline not in dirs:
                continue
            base_rows = training_rows(read_rows(dirs[baseline]))
            t_base = max((float(r["elapsed_s"]) for r in base_rows), default=0.0)
            step = eval_step_at(read_rows(dirs[arm]), t_base)
            if step is None:
                continue
            a, b = matched_correct(final_eval(dirs[baseline]), read_eval(dirs[arm], step))
            xa += a
            xb += b
        out[arm] = paired_difference(xa, xb) if xa else None
    return out


def wallclock_lines(ttt: dict[str, dict], eq: dict[str, dict], baseline: str = BASELINE) -> list[str]:
    """summary.md's table of time to target and accuracy at equal wall-clock."""
    def pct(p):
        if not p or p.get("diff") is None:
            return "-"
        lo, hi = p["ci95"]
        return f"{100 * p['diff']:+.1f} [{100 * lo:+.1f}, {100 * hi:+.1f}] (p {p['p']:.3g}, {p['n']} pairs)"

    def speed(r):
        s = r["speedup"]
        if s["ratio"] is None:
            return "-"
        return f"{s['ratio']:.2f}x" + (f" [{s['lo']:.2f}, {s['hi']:.2f}]" if s["lo"] is not None else "") + \
            f" ({s['k']} seeds)"

    lines = [(f"Time to target (99% of that seed's `{baseline}` peak) and accuracy at equal wall-clock "
              f"(the arm's last evaluation within `{baseline}`'s training time vs `{baseline}`'s final one). "
              f"Speed-up = mean `{baseline}` time / mean arm time over the seeds where both reached the target, "
              "95% percentile bootstrap over those seeds:"), "",
             f"| arm | reached target | speed-up vs {baseline} | accuracy at {baseline}'s time, minus {baseline} "
             "(points [95% CI]) |", "|---|---:|---:|---:|"]
    for arm, r in ttt.items():
        lines.append(f"| {arm} | {r['reached']}/{r['of']} seeds | {speed(r)} | "
                     f"{'-' if arm == baseline else pct(eq.get(arm))} |")
    gone = sorted({s for r in ttt.values() for s in r.get("no_target", [])})
    if gone:
        lines += ["", (f"No target on seed{'s' if len(gone) > 1 else ''} {', '.join(map(str, gone))}: `{baseline}` "
                       "never beat its step-0 accuracy there, so every arm met the target untrained: "
                       "left out of the time to target (not counted as reached).")]
    return lines + [""]
