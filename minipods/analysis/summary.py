"""The summary of a study, with the seed (one training run) as the unit of every comparison. A study
is `dict[seed, dict[arm, list[Point]]]` (each list non-empty, in time order), from run folders
(results.read_study) or the paper's released runs (paper_runs):

    s = summarize_study(study, baseline="grpo", focus="pods")   # every comparison, as numbers
    print("\\n".join(summary_lines(s)))                          # summary.md (write_summary: also .csv)

The rules (target = the baseline's plateau, not its best; no target; censoring) are stated in
docs/training.md, "Evaluation and the PODS-vs-GRPO comparison", and written once here (`_seed_times`)."""

from __future__ import annotations

import csv
import math
import statistics
from pathlib import Path
from typing import NamedTuple

import numpy as np

from minipods.stats import mean_interval, paired_difference, ratio_interval, sign_flip_p, t975

BASELINE = "grpo"  # whose plateau is the target (paper: vanilla GRPO)
FOCUS = "pods_max_variance"  # the arm compared with every other one (the paper's PODS)
PLATEAU_K = 2  # the target: mean of the baseline's last 2 evaluations
Z80 = 0.8416  # the normal 80% quantile: a paired t-test's 80%-power effect is about (t975 + Z80) sd / sqrt(k)


class Point(NamedTuple):
    """One evaluation of one run."""
    seconds: float  # training seconds at the evaluation (evaluation time excluded)
    step: int
    accuracy: float
    n: int | None = None  # questions evaluated
    correct: dict | None = None  # question index -> 0/1, where the per-question rows were kept


def FINAL(a: list[Point], b: list[Point]):  # noqa: N802 (a constant-like picker)
    return a[-1], b[-1]


def LEARNING(a: list[Point], b: list[Point]):  # noqa: N802
    """The first evaluation of a against the final one of b (a == b: an arm's learning)."""
    return a[0], b[-1]


def EQUAL_TIME(a: list[Point], b: list[Point]):  # noqa: N802
    """Both arms at the same training time T, the earlier of their final evaluations': the arm that ended first at
    its final evaluation, the other interpolated linearly between its evaluations around T (no per-question rows)."""
    t = min(a[-1].seconds, b[-1].seconds)
    return tuple(p[-1] if p[-1].seconds == t else Point(t, p[-1].step, float(np.interp(
        t, [x.seconds for x in p], [x.accuracy for x in p])), p[-1].n) for p in (a, b))


def difference(study: dict, a: str, b: str, pick=FINAL) -> dict:
    """b minus a at the evaluations `pick` chooses: per_seed (seed -> diff, paired: paired_difference
    where both kept their questions), seeds (mean_interval of the diffs, p: sign-flip) and pooled
    (paired_difference over every (seed, question) pair when every seed kept its questions, else None)."""
    per_seed, xa, xb, whole = {}, [], [], True
    for s, arms in study.items():
        if a not in arms or b not in arms:
            continue
        pa, pb = pick(arms[a], arms[b])
        if pa is None or pb is None:
            continue
        paired = None
        if pa.correct is not None and pb.correct is not None:
            common = [i for i in pa.correct if i in pb.correct]
            ca, cb = [pa.correct[i] for i in common], [pb.correct[i] for i in common]
            paired, xa, xb = paired_difference(ca, cb), xa + ca, xb + cb
        whole = whole and paired is not None
        per_seed[s] = {"diff": pb.accuracy - pa.accuracy, "paired": paired}
    diffs = [v["diff"] for v in per_seed.values()]
    sd = statistics.stdev(diffs) if len(diffs) > 1 else None  # the per-seed spread
    return {"a": a, "b": b, "per_seed": per_seed, "seeds": {**mean_interval(diffs, (-1.0, 1.0)), "p": sign_flip_p(diffs),
                                                            "sd": sd},
            "pooled": paired_difference(xa, xb) if whole and per_seed else None}


def standard_error(t: float, n: int | None) -> float:
    """One evaluation's standard error at accuracy t on n questions (0 when n is unknown)."""
    return math.sqrt(max(t * (1 - t), 0.0) / n) if n else 0.0


def time_averaged(points: list[Point], budget_s: float) -> float:
    """Area under accuracy against training seconds from 0 to budget_s, divided by budget_s: trapezoids
    between evaluations; the segment crossing the budget is interpolated to it (a run stops at the first
    step end at or after its budget, so its last evaluation is a little late) and later ones are ignored;
    a curve ending before the budget holds its last value, one starting after 0 s its first (budget 0: the
    first value). Uses every evaluation; no target, grid or censoring."""
    if budget_s <= 0:
        return points[0].accuracy
    ts = sorted({0.0, budget_s} | {p.seconds for p in points if p.seconds < budget_s})
    ys = np.interp(ts, [p.seconds for p in points], [p.accuracy for p in points])  # beyond the ends: the end values
    return float(np.sum(np.diff(ts) * (ys[1:] + ys[:-1]) / 2) / budget_s)


def _reach(points: list[Point], level: float) -> Point | None:
    return next((p for p in points if p.accuracy >= level - 1e-12), None)


def _seed_times(arms: dict, baseline: str, k: int, target: float | None):
    """(target, tolerance) of one seed and arm -> {seconds, step, end_s, end_step}; None: no target."""
    if target is None:
        last = arms[baseline][-k:]
        target = sum(p.accuracy for p in last) / len(last)
    any_pts = arms.get(baseline) or next(iter(arms.values()))
    tol = standard_error(target, any_pts[-1].n)
    base_hit = _reach(arms[baseline], target - tol) if baseline in arms else None
    if base_hit is not None and base_hit.step == 0:
        return None  # the no-target rule
    times = {}
    for a, pts in arms.items():
        hit = _reach(pts, target - tol)
        times[a] = {"seconds": None if hit is None else hit.seconds, "step": None if hit is None else hit.step,
                    "end_s": pts[-1].seconds, "end_step": pts[-1].step}
    return (target, tol), times


def time_to_target(study: dict, baseline: str = BASELINE, k: int = PLATEAU_K, target: float | None = None) -> dict:
    """targets (seed -> (target, tolerance); None: no target) and per arm: per_seed (seed -> seconds,
    step (None: never), end_s, end_step), reached, of, censored (censored_seeds), restricted_s/_step (never = the
    run's end), speedup (ratio_interval of baseline over arm seconds) and left_out (seed -> why it has no ratio)."""
    targets, per = {}, {}
    for s, arms in study.items():
        if baseline not in arms and target is None:
            continue
        got = _seed_times(arms, baseline, k, target)
        targets[s] = got and got[0]
        for a, t in (got[1].items() if got else ()):
            per.setdefault(a, {})[s] = t
    out = {}
    for a, by_seed in per.items():
        end_s = [v["end_s"] if v["seconds"] is None else v["seconds"] for v in by_seed.values()]
        end_step = [v["end_step"] if v["step"] is None else v["step"] for v in by_seed.values()]
        ratios, censored = [], []
        left = {s: f"no target: `{baseline}`'s step-0 evaluation already meets its plateau (no measurable learning)"
                for s, tt in targets.items() if tt is None}
        for (s, v), t_arm in zip(by_seed.items(), end_s):  # t_arm: censored seeds at the run's end
            base = per.get(baseline, {}).get(s, {}).get("seconds")
            if base is not None and t_arm:
                ratios.append(base / t_arm)
                censored += [s] if v["seconds"] is None else []
            else:
                left[s] = f"no `{baseline}` time" if base is None else "at the target at 0 s"
        out[a] = {"per_seed": by_seed, "reached": sum(v["seconds"] is not None for v in by_seed.values()), "of": len(by_seed),
                  "censored": len(censored), "censored_seeds": censored, "left_out": left, "restricted_s": mean_interval(end_s, (0, math.inf)),
                  "restricted_step": mean_interval(end_step, (0, math.inf)), "speedup": ratio_interval(ratios)}
    return {"baseline": baseline, "plateau_k": None if target is not None else k, "targets": targets, "arms": out}


def summarize_study(study: dict, baseline: str | None = BASELINE, focus: str | None = FOCUS,
                    costs: dict[str, dict] | None = None, pricing: dict[str, str] | None = None,
                    repriced: tuple[str, dict | str] | None = None, budget_s: float | None = None,
                    note: tuple[str, str] | None = None, machines: dict | None = None) -> dict:
    """Every comparison of a study (final, time-averaged, learning, focus minus each arm, equal time, time to
    target). costs: arm -> numbers copied into the files; pricing: arm -> its update pricing; repriced:
    (another pricing, the study's seconds under it or why there are none); budget_s: the time-averaged
    accuracy's horizon (None: per seed, its arms' earliest end); note: what that statistic is to this study
    as (tag, sentence), e.g. its primary; machines: seed -> results.machine. A missing baseline/focus: left out."""
    arms = list(dict.fromkeys(a for by_arm in study.values() for a in by_arm))
    baseline, focus = (baseline if baseline in arms else None), (focus if focus in arms else None)
    to, got = repriced or (None, None)
    other = None if not (repriced and baseline) else {"to": to, "cannot": got} if isinstance(got, str) else \
        {"to": to, "time": time_to_target(got, baseline)}
    hz = {s: budget_s or min((p[-1].seconds for p in by.values()), default=0.0) for s, by in study.items()}
    avg = {s: {a: [Point(hz[s], p[-1].step, time_averaged(p, hz[s]))] for a, p in by.items()} for s, by in study.items()}
    return {"seeds": list(study), "arms": arms, "baseline": baseline, "focus": focus, "costs": costs or {},
            "pricing": pricing or {}, "repriced": other, "budget_s": budget_s,
            "note": note or ("no primary declared", "no primary statistic was declared for this study"), "machines": machines or {},
            "averaged": {a: mean_interval([by[a][0].accuracy for by in avg.values() if a in by], (0.0, 1.0)) for a in arms},
            "averaged_versus": {a: difference(avg, a, focus) for a in arms if a != focus} if focus else {},
            "final": {a: mean_interval([by[a][-1].accuracy for by in study.values() if a in by], (0.0, 1.0))
                      for a in arms},
            "learning": {a: difference(study, a, a, LEARNING) for a in arms},
            "versus": {a: difference(study, a, focus) for a in arms if a != focus} if focus else {},
            "equal_time": {a: difference(study, baseline, a, EQUAL_TIME) for a in arms if a != baseline}
            if baseline else {},
            "time": time_to_target(study, baseline) if baseline else None}


# ---------------------------------------------------------------- formatting
def _pts(x: float, unit: str = "", ci=None) -> str:
    """A difference in points (a true minus sign), then its interval [lo, hi] where there is one."""
    return f"{100 * x:+.1f}".replace("-", "−") + unit + (f" [{_pts(ci[0])}, {_pts(ci[1])}]" if ci else "")


def fmt_p(p: float | None) -> str:
    return "-" if p is None else ("<0.0001" if p < 1e-4 else f"{p:.2g}")


def _seed_cell(v: dict, unit: str = "") -> str:
    return _pts(v["diff"], unit, v["paired"] and v["paired"]["ci95"])


def _cell(d: dict | None, unit: str = "") -> str:
    """A difference: the seed-level mean [t CI] (one seed: its diff [paired CI]); "-" when there is none."""
    if not d or not d["per_seed"]:
        return "-"
    m = d["seeds"]
    if m["k"] > 1:
        return _pts(m["mean"], unit, (m["lo"], m["hi"]))
    return _seed_cell(next(iter(d["per_seed"].values())), unit)


def format_difference(d: dict, per_seed: bool = True, pooled: bool = True) -> str:
    """The one paired line: the across-seed mean [t 95% CI], sign-flip p, per seed, then (`pooled`) the pooled
    interval (these seeds' questions). One seed: its paired interval on this seed's questions."""
    ps, m = d["per_seed"], d["seeds"]
    if not ps:
        return "-"
    if m["k"] == 1:
        q = next(iter(ps.values()))["paired"]
        return _cell(d, " points") + (f" on this seed's {q['n']} questions (McNemar p {fmt_p(q['p'])}; one run: "
                                       "no seed-level interval)" if q else " (one run: no interval)")
    line = _cell(d, " points") + f" over {m['k']} seeds (t 95% CI" + \
        (f"; sign-flip p {fmt_p(m['p'])})" if m["p"] is not None else ")")
    if per_seed:
        line += "; per seed " + ", ".join(map(_seed_cell, ps.values()))
    if pooled and (q := d["pooled"]):
        line += f"; these seeds' {q['n']} questions pooled {_pts(q['diff'], '', q['ci95'])}"
    return line


def _mi(m: dict) -> str:
    return "-" if m["mean"] is None else f"{100 * m['mean']:.1f}" + (
        f" [{100 * m['lo']:.1f}, {100 * m['hi']:.1f}]" if m["lo"] is not None else "")


def _t(x: float, unit: str) -> str:
    return f"{x:.0f} s" if unit == "s" else f"{x:.2f} {unit}"


def _time_cell(t: dict, baseline: str, arm: str, unit: str) -> tuple[str, str]:
    r = t["arms"].get(arm)
    if not r or not r["of"]:
        return "-", "-"
    sec, stp, ge = r["restricted_s"], r["restricted_step"], "≥" if r["reached"] < r["of"] else ""
    time = f"{r['reached']}/{r['of']}; {ge}{_t(sec['mean'], unit)}, {ge}{stp['mean']:.1f} steps"
    sp = r["speedup"]
    if arm == baseline or sp["ratio"] is None:
        return time, "-"
    return time, f"{speedup_text(sp, r['censored'])} ({sp['k']} of {sp['k'] + len(r['left_out'])} seeds, {r['censored']} censored)"


def speedup_text(sp: dict, censored: int = 0) -> str:
    """A ratio_interval as '1.23x [0.90, 1.70]'; `≤` first when censored seeds entered at their bound."""
    return f"{'≤' * bool(censored)}{sp['ratio']:.2f}x" + (f" [{sp['lo']:.2f}, {sp['hi']:.2f}]" if sp["lo"] is not None else "")


def _time_lines(s: dict, unit: str) -> list[str]:
    t, base = s["time"], s["baseline"]
    k = f"the mean of its last {t['plateau_k']} evaluations" if t["plateau_k"] else "declared before the study"
    lines = [f"Time to target: the target of a seed is `{base}`'s plateau ({k}); an arm reaches it at its first "
             "evaluation within one evaluation's standard error below it. Per seed, training time (step); "
             "never = not within the run (kept: `≥` means count it at the run's end, a speed-up `≤` enters "
             "censored seeds at their bound):", "",
             "| seed | target % (tolerance) | " + " | ".join(s["arms"]) + " |", "|---|---:|" + "---:|" * len(s["arms"])]
    for seed, tt in t["targets"].items():
        if tt is None:
            lines.append(f"| {seed} | no target: `{base}`'s step-0 evaluation meets it | " + " | ".join(
                "-" for _ in s["arms"]) + " |")
            continue
        cells = [t["arms"].get(a, {}).get("per_seed", {}).get(seed) for a in s["arms"]]
        lines.append(f"| {seed} | {100 * tt[0]:.1f} (±{100 * tt[1]:.1f}) | " + " | ".join(
            "-" if c is None else (f"{_t(c['seconds'], unit)} ({c['step']})" if c["seconds"] is not None
                                   else f"never ({_t(c['end_s'], unit)}, {c['end_step']})") for c in cells) + " |")
    return lines + [""] + [f"Speed-up of `{a}`: " + "; ".join([f"left out: seed {s}, {why}" for s, why in r["left_out"].items()] + (
        [f"censored (at its run's end): seed{'s' * (r['censored'] > 1)} {', '.join(map(str, r['censored_seeds']))}"] if r["censored"] else [])
        ) + "." for a, r in t["arms"].items() if a != base and (r["left_out"] or r["censored"])] + [""]


def _pricing_lines(s: dict, unit: str) -> list[str]:
    """The update pricing each arm ran, and time to target as run beside re-priced (an estimate)."""
    lines = ["Update pricing (config.json): " + ", ".join(f"`{a}` {p}" for a, p in s["pricing"].items()) + ".", ""]
    r = s["repriced"]
    if r is None or s["time"] is None:
        return lines
    if "cannot" in r:
        return lines + [f"Time to target re-priced to {r['to']}: cannot be computed: {r['cannot']}.", ""]
    head = f"re-priced to {r['to']} (estimate from per-row costs)"
    lines += [f"Time to target as run and {head}: each update's seconds scaled by the rows it would process.", "",
              f"| arm | as run | speed-up as run | {head} | speed-up re-priced |", "|---|---:|---:|---:|---:|"]
    for a in s["arms"]:
        cells = [a, *_time_cell(s["time"], s["baseline"], a, unit), *_time_cell(r["time"], s["baseline"], a, unit)]
        lines.append("| " + " | ".join(cells) + " |")
    return lines + [""]


def resolvable(xs: list[float]) -> tuple[float, float] | None:
    """(95% half-width t975 sd/sqrt(k), effect found 4 times in 5 ~ (t975 + Z80) sd/sqrt(k)) over k runs; None: k < 2."""
    m = mean_interval(xs)
    return None if m["lo"] is None else ((m["hi"] - m["lo"]) / 2, (m["hi"] - m["lo"]) / 2 * _power80(m["k"]))


def _power80(k: int) -> float:  # the 80%-power effect over the 95% interval's half-width, for k runs
    return (t975(k - 1) + Z80) / t975(k - 1)


def resolve_lines(s: dict) -> list[str]:
    """What this many seeds can and cannot resolve, from their own spread (the study's power question)."""
    k, base, focus = len(s["seeds"]), s["baseline"], s["focus"]
    head = [f"What {k} seed{'s' * (k > 1)} can resolve (the training run is the unit):", ""]
    if k < 2:
        return head + ["- One seed: no seed-level interval and no p over runs; its paired intervals are about "
                       "its own questions. Whether one arm beats another in general needs several seeds (the "
                       "authors ran ten per arm; docs/results.md sizes the laptop study).", ""]
    lines = [f"- The exact sign-flip p of {k} seeds is at least 2/2^{k} = {2 / 2 ** k:.3g}"
             + (": no difference can reach p < 0.05 with so few." if 2 / 2 ** k >= 0.05 else ".")]
    for what, key in (("Final accuracy", "versus"), ("Time-averaged accuracy", "averaged_versus")):
        d = s[key].get(base) if base and focus else None
        if r := d and resolvable([v["diff"] for v in d["per_seed"].values()]):
            lines.append(f"- {what}, `{focus}` minus `{base}`: the interval is ±{100 * r[0]:.1f} points; with this "
                         f"spread a true difference under ~{100 * r[1]:.1f} points is missed more than 1 time in 5.")
    sp = s["time"]["arms"].get(focus, {}).get("speedup") if s["time"] and focus else None
    if sp and sp["lo"] is not None:
        h = math.log(sp["hi"] / sp["lo"]) / 2
        lines.append(f"- Speed-up of `{focus}` over `{base}` ({sp['k']} seeds with a ratio): the interval is "
                     f"×/÷{math.exp(h):.2f}; a true speed-up under ~{math.exp(h * _power80(sp['k'])):.2f}x is missed "
                     "more than 1 time in 5.")
    return head + lines + [""]


def summary_lines(s: dict, configs: dict[str, dict] | None = None, unit: str = "s") -> list[str]:
    """summary.md's lines; times (the Points' and budget_s) in `unit` ("s" for training seconds, e.g. "h" for hours)."""
    configs, base, focus, seeds = configs or {}, s["baseline"], s["focus"], s["seeds"]
    lines = [f"# minipods comparison: {len(seeds)} seed{'s' * (len(seeds) > 1)} ({', '.join(map(str, seeds))})", "",
             "The training run is the unit: each difference is the mean over seeds of the per-seed difference with "
             "a Student-t 95% interval and the exact sign-flip p; a pooled interval is about these seeds' "
             "questions only. Accuracies in %, differences in points." if len(seeds) > 1
             else "One training run: every interval here is Newcombe's paired interval on this seed's questions, a "
                  "statement about these questions, not about the arms (run several seeds for that). Accuracies in "
                  "%, differences in points.", ""]
    fin = [f"- `{focus}` minus `{a}`, final evaluations: {format_difference(d)}" for a, d in s["versus"].items()]
    avg = [f"- `{focus}` minus `{a}`, time-averaged accuracy ({s['note'][0]}): {format_difference(d)}"
           for a, d in s["averaged_versus"].items()]
    lines += avg + fin if s["note"][0] == "primary" else fin + avg  # a primary comes first
    for a, d in s["equal_time"].items():
        lines.append(f"- `{a}` minus `{base}` at the same training time (the earlier final evaluation's; the other arm "
                     f"interpolated between its evaluations): {format_difference(d)}")
    head = (f"| arm | n | m | final acc | learning (first → final) | {focus or '-'} minus arm | "
            + (f"reached target; time (restricted mean) | speed-up vs {base} | " if s["time"] else "")
            + "s/step (rollout + update) | zero-std groups | peak mem MB |")
    lines += ["", head, "|---|" + "---:|" * (head.count("|") - 2)]
    for a in s["arms"]:
        c, cfg = s["costs"].get(a, {}), configs.get(a, {})
        cells = [a, str(cfg.get("n", "-")), str(cfg.get("m", "-")), _mi(s["final"][a]), _cell(s["learning"][a]),
                 _cell(s["versus"].get(a))]
        cells += list(_time_cell(s["time"], base, a, unit)) if s["time"] else []
        step = (f"{c['mean_step_s']:.2f} ({c['mean_rollout_s']:.2f} + {c['mean_update_s']:.2f})"
                if c.get("mean_step_s") is not None and c.get("mean_rollout_s") is not None else "-")
        cells += [step, "-" if c.get("zero_std_frac") is None else f"{c['zero_std_frac']:.2f}",
                  "-" if c.get("peak_mem_mb") is None else f"{c['peak_mem_mb']:.0f}"]
        lines.append("| " + " | ".join(cells) + " |")
    lines += [""] + (_time_lines(s, unit) if s["time"] else [])
    lines += _pricing_lines(s, unit) if s.get("pricing") else []
    return lines + _averaged_lines(s, unit) + _machine_lines(s) + resolve_lines(s)


def _averaged_lines(s: dict, unit: str) -> list[str]:
    """What the time-averaged accuracy is, what it is to this study, each arm's, and every statistic's spread."""
    b = s["budget_s"]
    span = f"0 to {_t(b, unit)}" if b else "0 to each seed's earliest end of its arms"
    lines = [f"Time-averaged accuracy: the area under accuracy against training time from {span}, divided by that "
             "time (trapezoids between evaluations; an evaluation after the budget interpolated to it, the last value "
             f"held if a run ends before it); {s['note'][1]}. "
             + ("Per arm, the mean over seeds [t 95% CI]: " if len(s["seeds"]) > 1 else "Per arm: ") + ", ".join(f"`{a}` {_mi(m)}" for a, m in s["averaged"].items()) + ".", ""]
    base, focus = s["baseline"], s["focus"]
    fin, avg = s["versus"].get(base), s["averaged_versus"].get(base)
    if not (fin and fin["seeds"]["sd"] is not None and avg):
        return lines
    sds = [f"final accuracy {100 * fin['seeds']['sd']:.1f} points", f"time-averaged accuracy {100 * avg['seeds']['sd']:.1f} points"]
    sp = s["time"]["arms"].get(focus, {}).get("speedup") if s["time"] else None
    if sp and sp["lo"] is not None:
        sd = math.log(sp["hi"] / sp["lo"]) / 2 * math.sqrt(sp["k"]) / t975(sp["k"] - 1)
        sds.append(f"time to target {sd:.2f} in log speed-up (×/÷{math.exp(sd):.2f}; {sp['k']} seeds)")
    return lines + [f"Per-seed spread (SD over seeds) of `{focus}` minus `{base}`: " + "; ".join(sds) +
                    ". Against the same effect, the smaller spread is the sharper instrument (below: what each resolves).", ""]


def _machine_lines(s: dict) -> list[str]:
    """The machines (CPU, threads) with the seeds each ran; each seed's probe beside its time-averaged difference."""
    by: dict[str, list] = {}
    for seed, m in s["machines"].items():
        by.setdefault(m["name"], []).append(str(seed))
    d = s["averaged_versus"].get(s["baseline"]) or {"per_seed": {}}
    probed = [f"{seed}: {m['gflops']:.0f} → {_pts(d['per_seed'][seed]['diff'])}" for seed, m in s["machines"].items()
              if m["gflops"] and seed in d["per_seed"]]
    return (["Machines (a seed's arms ran on one): " + "; ".join(f"{n}: seeds {', '.join(v)}" for n, v in by.items()) + "."]
            + ([f"Per seed, its machine probe (fp32 matmul GFLOP/s, the arms' mean) → `{s['focus']}` minus `{s['baseline']}`, "
                "time-averaged: " + ", ".join(probed) + "."] if probed else []) + [""] if by else [])


def _csv_row(s: dict, a: str, configs: dict) -> dict:
    cfg = configs.get(a, {})
    row = {"arm": a, "method": cfg.get("method"), "rule": cfg.get("rule") if cfg.get("method") != "grpo" else None,
           "n": cfg.get("n"), "m": cfg.get("m"), "seeds": s["final"][a]["k"]}
    row.update({f"{name}_{k}": s[name][a][k] for name in ("final", "averaged") for k in ("mean", "lo", "hi")})
    for name, d in (("learn", s["learning"][a]), ("vs_focus", s["versus"].get(a)), ("equal_time", s["equal_time"].get(a)),
                    ("averaged_vs_focus", s["averaged_versus"].get(a))):
        if d and d["per_seed"]:
            row.update({f"{name}_{k}": d["seeds"][k] for k in ("mean", "lo", "hi", "k", "p", "sd")})
            if q := d["pooled"]:
                row.update({f"{name}_questions_{k}": v for k, v in
                            zip(("diff", "lo", "hi", "n"), (q["diff"], q["ci95"][0], q["ci95"][1], q["n"]))})
    if r := (s["time"] or {"arms": {}})["arms"].get(a):
        row.update(reached=r["reached"], of=r["of"], censored=r["censored"], time_s=r["restricted_s"]["mean"],
                   time_step=r["restricted_step"]["mean"], speedup=r["speedup"]["ratio"],
                   speedup_lo=r["speedup"]["lo"], speedup_hi=r["speedup"]["hi"])
    return {**row, **s["costs"].get(a, {}), "arm": a}


def write_summary(s: dict, out_dir: str | Path, configs: dict[str, dict] | None = None) -> tuple[Path, Path]:
    """summary.md (`summary_lines`) and summary.csv (one row per arm, every number; empty = none)."""
    out_dir, configs = Path(out_dir), configs or {}
    rows = [_csv_row(s, a, configs) for a in s["arms"]]
    cols = list(dict.fromkeys(k for r in rows for k in r))
    csv_path, md_path = out_dir / "summary.csv", out_dir / "summary.md"
    with csv_path.open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=cols)
        w.writeheader()
        w.writerows({k: ("" if r.get(k) is None else r[k]) for k in cols} for r in rows)
    md_path.write_text("\n".join(summary_lines(s, configs)))
    return md_path, csv_path
