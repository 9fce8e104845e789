"""The laptop study's design numbers: what one seed costs and how many seeds it needs.

    python scripts/study_design.py            # the tables of docs/results.md, "Power calculation"
    python scripts/study_design.py --probe DIR  # is this sitting's machine fit for study seeds?
    python scripts/study_design.py --probe DIR --study-pilot class  # ... for the class study's reference seeds?
    python scripts/study_design.py --power-table  # the class study's sizing and power (docs/class_study.md)

The probe (docs/results.md, "Machine speed"): the pilot's first 33 GRPO steps again, same seed, so the
same tokens; only the machine's speed differs. Run it alone, then read it with --probe:

    OMP_NUM_THREADS=2 python -m minipods.train --preset laptop --method grpo --seed 100 --max-steps 33 \
        --eval-limit 0 --budget-s 0 --no-progress --output-dir /tmp/probe

Time: one step of `--preset laptop` is estimated from the five-seed study's idle per-step split
(docs/results.md: `grpo` 4 prompts x 4 rollouts, `pods_max_variance` 4 x 8, on 2 idle cores) as
two lines, rollout seconds = a + b * sequences and update seconds = u * rows, and one evaluation
from that study's evaluation seconds per question. An estimate until the study measures it.

Power: the speed-up is read per seed as the log ratio of GRPO's to PODS's time to target; a paired
t-test over seeds (two-sided, 5%) resolves a ratio r at 80% power with the fewest seeds whose
simulated power reaches 0.8. The per-seed spread comes from that study's seeds (its per-seed table).
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path
from typing import NamedTuple

import numpy as np

from minipods.stats import t975
from minipods.presets import LAPTOP_BUDGET_S, LAPTOP_EVAL_EVERY_S, LAPTOP_EVAL_LIMIT, PRESETS

# docs/results.md, the five-seed study of `compare --small` (4 prompts per step, idle 2-core EPYC):
# mean s/step split (rollouts + update) and the fraction of silent groups, per arm
OLD_GRPO = {"rollout_s": 6.8, "update_s": 3.7, "sequences": 16, "live_rows": 16 * (1 - 0.61)}
OLD_PODS = {"rollout_s": 8.9, "update_s": 5.3, "sequences": 32, "live_rows": 16 * (1 - 0.39)}
OLD_EVAL_S_PER_QUESTION = 283 / (5 * 128)  # the largest "five evaluations and the model load" over 5 x 128 questions
# per seed, training seconds to the target (seeds 0, 3, 4: both arms reached it) and final accuracy (seeds 0-4)
OLD_TIME_TO_TARGET = {"grpo": [320, 313, 405], "pods_max_variance": [364, 354, 336]}
OLD_FINAL_ACC = {"grpo": [41.4, 49.2, 9.4, 57.0, 45.3], "pods_max_variance": [29.7, 37.5, 30.5, 57.8, 53.9]}
PILOT_PROBE_S = 183.0  # the pilot's training seconds at step 33 (its 180 s evaluation: docs/results.md)


class Pilot(NamedTuple):
    """A study's pilots' machine, as its probe and its budget measured it."""
    probe_s: float  # the probe's training seconds at step 33 there
    budget_s: float  # the study's training seconds per arm
    steps: float  # GRPO steps that budget bought the pilots
    who: str  # whose steps, in the verdict


# laptop: the pilot's 239 steps in its first 901 s. class: the same probe before pilot seed 101 (AMD EPYC Zen 3,
# 2 cores: docs/class_study.md); at the chosen lr 2e-4 the pilots' GRPO ran 75 and 96 steps (pilots/class/lr2e-4-seed10{0,1})
PILOTS = {"laptop": Pilot(PILOT_PROBE_S, LAPTOP_BUDGET_S, 239.0, "the pilot"),
          "class": Pilot(235.0, PRESETS["class"]["budget_s"], (75 + 96) / 2, "the pilots' mean")}
PROBE_STEPS = 33
PROBE_TOLERANCE = 1.25  # study seeds run where the probe takes at most this multiple of the pilot's
OLD_USABLE = 3 / 5  # seeds of five on which both arms reached a target (seed 2: none; seed 1: PODS never)


def step_estimate(n: int, m: int, prompts: int = 1) -> float:
    """Estimated idle seconds of one step: rollouts of prompts * n sequences, an update that pays
    for all prompts * m kept rows (the paper's pricing)."""
    b = (OLD_PODS["rollout_s"] - OLD_GRPO["rollout_s"]) / (OLD_PODS["sequences"] - OLD_GRPO["sequences"])
    a = OLD_GRPO["rollout_s"] - b * OLD_GRPO["sequences"]
    u = (OLD_GRPO["update_s"] + OLD_PODS["update_s"]) / (OLD_GRPO["live_rows"] + OLD_PODS["live_rows"])
    return a + b * prompts * n + u * prompts * m


def arm_wall_estimate(budget_s: float, eval_every_s: float, eval_limit: int) -> dict:
    """An arm's wall seconds: its training budget plus its evaluations (step 0, each grid time, the end)."""
    evals = 1 + math.ceil(budget_s / eval_every_s)
    eval_s = evals * eval_limit * OLD_EVAL_S_PER_QUESTION
    return {"evals": evals, "eval_s": eval_s, "wall_s": budget_s + eval_s, "eval_share": eval_s / (budget_s + eval_s)}


def t_test_power(n: int, effect: float, sd: float, alpha: float = 0.05, sims: int = 20000, seed: int = 0) -> float:
    """Power of a two-sided one-sample (paired) t-test on n seeds whose values are Normal(effect, sd),
    by simulation (no scipy): the critical |t| is the simulated null's 1 - alpha quantile."""
    if n < 2:
        return 0.0
    rng = np.random.default_rng([seed, n])

    def t_stats(mean):
        x = rng.normal(mean, sd, (sims, n))
        return np.abs(x.mean(1) / (x.std(1, ddof=1) / math.sqrt(n)))

    crit = np.quantile(t_stats(0.0), 1 - alpha)
    return float((t_stats(effect) > crit).mean())


def seeds_needed(effect: float, sd: float, power: float = 0.8, alpha: float = 0.05, most: int = 200) -> int | None:
    """The fewest seeds (2..most) at which the paired t-test reaches `power`; None if more are needed."""
    return next((n for n in range(2, most + 1) if t_test_power(n, effect, sd, alpha) >= power), None)


def detectable(n: int, sd: float, power: float = 0.8, alpha: float = 0.05) -> float:
    """The smallest effect resolved at `power` with n seeds (bisection over the effect)."""
    lo, hi = 0.0, 20 * sd
    for _ in range(30):
        mid = (lo + hi) / 2
        lo, hi = (lo, mid) if t_test_power(n, mid, sd, alpha) >= power else (mid, hi)
    return hi


def old_spreads() -> dict:
    """Per-seed spreads of the five-seed study: SD of log(grpo time / pods time) and of the final
    accuracy difference (points)."""
    g, p = OLD_TIME_TO_TARGET["grpo"], OLD_TIME_TO_TARGET["pods_max_variance"]
    logs = np.log(np.array(g) / np.array(p))
    acc = np.array(OLD_FINAL_ACC["pods_max_variance"]) - np.array(OLD_FINAL_ACC["grpo"])
    return {"log_ratios": logs.round(3).tolist(), "sd_log": float(logs.std(ddof=1)),
            "acc_diffs": acc.round(1).tolist(), "sd_acc": float(acc.std(ddof=1))}


def sd_upper(sd: float, k: int, level: float = 0.8) -> float:
    """One-sided `level` upper confidence bound of an SD estimated from k values; exact for k = 3
    (2 degrees of freedom: the chi-square quantile is -2 ln(level)), else None."""
    return sd * math.sqrt(2 / (-2 * math.log(level))) if k == 3 else None


def grid_sd_log(eval_every_s: float, time_s: float) -> float:
    """SD added to a log time ratio by the evaluation grid: each arm's time to target is late by
    U(0, T) (SD T / sqrt 12), relative to a time to target of time_s, for two arms."""
    return math.sqrt(2) * eval_every_s / math.sqrt(12) / time_s


def report(seeds: int = 10, ratio: float = 1.3, budget_s: float = LAPTOP_BUDGET_S,
           eval_every_s: float = LAPTOP_EVAL_EVERY_S, eval_limit: int = LAPTOP_EVAL_LIMIT, log_ratios=None) -> str:
    sp, lines = old_spreads(), []
    if log_ratios:  # measured per-seed log ratios (e.g. the study's first seeds) replace the old study's
        sp.update(log_ratios=list(log_ratios), sd_log=float(np.std(log_ratios, ddof=1)))
    g, p = step_estimate(4, 4), step_estimate(16, 4)
    w = arm_wall_estimate(budget_s, eval_every_s, eval_limit)
    lines.append(f"step estimate (idle, 2 cores): grpo 4/4 {g:.1f} s, pods 16->4 {p:.1f} s (ratio {p / g:.2f}); "
                 f"{budget_s:.0f} s buys ~{budget_s / g:.0f} and ~{budget_s / p:.0f} steps")
    lines.append(f"arm: {w['evals']} evaluations x {eval_limit} questions = {w['eval_s']:.0f} s, wall {w['wall_s']:.0f} s "
                 f"(evaluation {100 * w['eval_share']:.0f}%); 3 arms = {3 * w['wall_s'] / 60:.1f} min per seed")
    silent = [(p_, q ** 4 + (1 - q) ** 4, q ** 16 + (1 - q) ** 16) for p_, q in (("20%", 0.2), ("50%", 0.5))]
    lines.append("silent steps (0/1 rewards all equal) at per-sample accuracy " + "; ".join(
        f"{p_}: grpo n=4 {100 * g4:.0f}%, pods n=16 {100 * p16:.1f}%" for p_, g4, p16 in silent))
    lines.append(f"{'given (--log-ratios)' if log_ratios else 'old study'}: log(grpo/pods time) per seed {sp['log_ratios']}, "
                 f"SD {sp['sd_log']:.3f}; old study's final accuracy difference {sp['acc_diffs']}, SD {sp['sd_acc']:.1f} points")
    up = sd_upper(sp["sd_log"], len(sp["log_ratios"]))
    lines.append(f"the grid ({eval_every_s:.0f} s) adds SD {grid_sd_log(eval_every_s, budget_s / 2):.2f} to a log ratio at "
                 f"{budget_s / 2:.0f} s; the old study's grid (8 steps, ~84-114 s) {grid_sd_log(99, 340):.2f} at 340 s" +
                 (f"; 80% upper bound of the SD (3 seeds): {up:.2f}" if up else ""))
    effect = math.log(ratio)
    lines.append(f"\n| SD of per-seed log ratio | seeds with a ratio for {ratio}x at 80% | seeds to run "
                 f"(x 1/{OLD_USABLE:.1f} usable) | ratio {seeds} seeds resolve ({round(seeds * OLD_USABLE)} usable) |")
    lines.append("|---:|---:|---:|---:|")
    for sd in sorted({round(sp["sd_log"], 3), 0.25, round(up or 0.35, 3)}):
        k = seeds_needed(effect, sd)
        run = math.ceil(k / OLD_USABLE) if k else None
        lines.append(f"| {sd:.3f} | {k} | {run} | {math.exp(detectable(round(seeds * OLD_USABLE), sd)):.2f}x |")
    lines.append(f"\naccuracy: with SD {sp['sd_acc']:.1f} points, {seeds} seeds resolve a final-accuracy difference of "
                 f"{detectable(seeds, sp['sd_acc']):.1f} points at 80% (5 points needs {seeds_needed(5.0, sp['sd_acc'])})")
    return "\n".join(lines)


# ---------------------------------------------------------------- the class study (docs/class_study.md)
STUDENTS = (10, 20, 40, 80)
PROBE_S = 4.0  # compare's machine probe at each time-budgeted arm's start (measure.speed.machine_limits)


def measured(study_dir: str | Path) -> dict:
    """A finished study's costs from its run folders: evaluation seconds per question (the mean over every
    evaluation and the slowest evaluation's), seconds per step per arm, and an arm's overhead (its wall time
    minus training and evaluation: model load, checkpoints)."""
    from minipods.analysis import results

    meta = json.loads((Path(study_dir) / results.COMPARISON_FILE).read_text())
    per_q, step_s, over = [], {}, []
    for arms in results.seed_dirs(study_dir, meta).values():
        for arm, d in arms.items():
            rows = results.read_rows(d)
            ev, tr = [r for r in rows if "eval_s" in r], results.training_rows(rows)
            per_q += [r["eval_s"] / r["eval_n"] for r in ev]
            step_s.setdefault(arm, []).extend(r["step_s"] for r in tr)
            over.append(results.read_done(d)["wall_s_this_call"] - tr[-1]["elapsed_s"] - sum(r["eval_s"] for r in ev))
    return {"eval_s_per_q": float(np.mean(per_q)), "eval_s_per_q_max": max(per_q), "overhead_s": float(np.mean(over)),
            "step_s": {a: float(np.mean(v)) for a, v in step_s.items()}, "evaluations": len(per_q)}


def class_sizing(m: dict, preset: dict, arms=("grpo", "pods_max_variance")) -> dict:
    """One student's seed under `preset` (budget_s, eval_every_s, eval_limit) at the measured costs `m`:
    evaluations per arm, evaluation and wall seconds (mean evaluation speed, and every evaluation as slow
    as the slowest measured), evaluation's share, and the steps each arm's budget buys."""
    evals = 1 + math.ceil(preset["budget_s"] / preset["eval_every_s"])  # step 0, each grid time, the end
    fixed = len(arms) * (preset["budget_s"] + m["overhead_s"] + PROBE_S)
    ev, ev_max = (len(arms) * evals * preset["eval_limit"] * m[k] for k in ("eval_s_per_q", "eval_s_per_q_max"))
    return {"evals": evals, "eval_s": ev, "wall_s": fixed + ev, "eval_share": ev / (fixed + ev),
            "wall_s_slowest": fixed + ev_max, "eval_share_slowest": ev_max / (fixed + ev_max),
            "slack_30min": (30 * 60 - fixed) / ev,  # how many times slower evaluation may be within 30 min
            "steps": {a: preset["budget_s"] / m["step_s"][a] for a in arms if a in m["step_s"]}}


def averaged_diffs(study_dir: str | Path, budget_s: float | None = None, a: str = "grpo",
                   b: str = "pods_max_variance") -> dict:
    """Per seed, b minus a (points): time-averaged accuracy over budget_s (None: the runs' own budget) and
    final accuracy; level: the mean time-averaged accuracy of both arms (0-1); config: a's config.json."""
    from minipods.analysis import results
    from minipods.analysis.summary import time_averaged

    meta = json.loads((Path(study_dir) / results.COMPARISON_FILE).read_text())
    dirs = results.seed_dirs(study_dir, meta)
    cfg = results.read_config(next(iter(dirs.values()))[a])
    budget = budget_s or cfg["budget_s"]
    pairs = [(by[a], by[b]) for by in results.read_study(dirs).values() if a in by and b in by]
    ta = [(time_averaged(x, budget), time_averaged(y, budget)) for x, y in pairs]
    return {"diffs": [100 * (y - x) for x, y in ta], "final": [100 * (y[-1].accuracy - x[-1].accuracy) for x, y in pairs],
            "level": float(np.mean(ta)), "config": cfg}


def eval_noise_sd(level: float, questions: int, budget_s: float, eval_every_s: float) -> float:
    """SD (points) that evaluating `questions` adds to a difference of two arms' time-averaged accuracies:
    binomial evaluations at accuracy `level` on a grid dividing the budget, trapezoid weights (the ends
    half), the arms' evaluations independent (an upper bound: a seed's arms answer the same questions)."""
    k = round(budget_s / eval_every_s)
    w2 = 2 * (0.5 / k) ** 2 + (k - 1) * (1 / k) ** 2
    return 100 * math.sqrt(2 * w2 * level * (1 - level) / questions)


def power_table(sds: dict[str, float], students=STUDENTS) -> list[str]:
    """Markdown: per class size, each SD's (column label -> SD) 95% t-interval half-width ± and the smallest
    difference a paired t-test finds 4 times in 5 (80% power, two-sided 5%), in the SD's unit."""
    head = "| students (seeds) | " + " | ".join(sds) + " |"
    lines = [head, "|---:|" + "---:|" * len(sds)]
    for n in students:
        cells = [f"±{t975(n - 1) * sd / math.sqrt(n):.1f} / {detectable(n, sd):.1f}" for sd in sds.values()]
        lines.append(f"| {n} | " + " | ".join(cells) + " |")
    return lines


def chi2_quantile(p: float, df: int) -> float:
    """The chi-square distribution's p quantile (bisection on its CDF, the incomplete gamma series; no scipy)."""
    def cdf(x: float) -> float:
        a, term, total, n = df / 2, 1.0, 1.0, 0
        while term > 1e-15 * total:
            n += 1
            term *= x / 2 / (a + n)
            total += term
        return math.exp(a * math.log(x / 2) - x / 2 - math.lgamma(a + 1)) * total
    lo, hi = 1e-9, df + 40 * math.sqrt(df) + 40
    for _ in range(100):
        lo, hi = ((lo + hi) / 2, hi) if cdf((lo + hi) / 2) < p else (lo, (lo + hi) / 2)
    return lo


def sd_interval(sd: float, k: int) -> tuple[float, float]:
    """The 95% interval of an SD measured over k normal values (chi-square with k - 1 degrees of freedom)."""
    return sd * math.sqrt((k - 1) / chi2_quantile(0.975, k - 1)), sd * math.sqrt((k - 1) / chi2_quantile(0.025, k - 1))


def sd_range_line(label: str, sd: float, k: int, students: int = 40) -> str:
    """What the SD's own uncertainty does to the power statement: its 95% interval and the class size's ± at its ends."""
    lo, hi = sd_interval(sd, k)
    half = (lambda s: t975(students - 1) * s / math.sqrt(students))
    return (f"{label}: SD {sd:.1f} over {k} seeds, itself uncertain: 95% interval [{lo:.1f}, {hi:.1f}] (chi-square, {k - 1} "
            f"df); {students} students: ±{half(sd):.1f} points at SD {sd:.1f}, ±{half(lo):.1f} to ±{half(hi):.1f} over that interval")


def class_report(study_dir: str, pilots: list[str] | None = None) -> str:
    preset, m = PRESETS["class"], measured(study_dir)
    z = class_sizing(m, preset)
    lines = [f"measured in {study_dir} ({m['evaluations']} evaluations): {m['eval_s_per_q']:.3f} s per question (slowest "
             f"evaluation {m['eval_s_per_q_max']:.3f}), arm overhead {m['overhead_s']:.1f} s, s/step " +
             ", ".join(f"{a} {v:.2f}" for a, v in m["step_s"].items()),
             f"--preset class (budget {preset['budget_s']:.0f} s, grid {preset['eval_every_s']:.0f} s, {preset['eval_limit']} "
             f"questions): {z['evals']} evaluations per arm; one seed {z['wall_s'] / 60:.1f} min, evaluation "
             f"{100 * z['eval_share']:.0f}% ({z['wall_s_slowest'] / 60:.1f} min and {100 * z['eval_share_slowest']:.0f}% at "
             "the slowest evaluation speed); steps bought: " + ", ".join(f"{a} ~{v:.0f}" for a, v in z["steps"].items())
             + f"; within 30 min while evaluation is at most {z['slack_30min']:.1f}x slower than measured"]
    own, cut = averaged_diffs(study_dir), averaged_diffs(study_dir, preset["budget_s"])
    cfg = own["config"]
    add = eval_noise_sd(cut["level"], preset["eval_limit"], preset["budget_s"], preset["eval_every_s"]) ** 2 - \
        eval_noise_sd(cut["level"], cfg["eval_limit"], cfg["budget_s"], cfg["eval_every_s"]) ** 2
    sd = (lambda xs: float(np.std(xs, ddof=1)))
    sds = {f"final accuracy, {study_dir}: SD {sd(own['final']):.1f} (for comparison)": sd(own["final"]),
           f"{study_dir} (its budget; post hoc): SD {sd(own['diffs']):.1f}": sd(own["diffs"]),
           f"{study_dir} cut at {preset['budget_s']:.0f} s (estimate): SD {sd(cut['diffs']):.1f}": sd(cut["diffs"]),
           f"the same with {preset['eval_limit']} questions' noise (estimate): SD {math.sqrt(sd(cut['diffs']) ** 2 + add):.1f}":
               math.sqrt(sd(cut["diffs"]) ** 2 + add)}
    ranges = []
    for other in pilots or []:  # a merged study of the class preset itself: the pilots', later the reference class's
        pd = averaged_diffs(other)["diffs"]
        sds[f"{other}: SD {sd(pd):.1f} over {len(pd)} seeds"] = sd(pd)
        ranges.append(sd_range_line(other, sd(pd), len(pd)))
    lines += ["", f"pods_max_variance minus grpo over {len(own['diffs'])} seeds, time-averaged accuracy unless said, in "
              "points: ± the 95% interval's half-width / the difference found 4 times in 5", *power_table(sds), "", *ranges]
    return "\n".join(lines)


def probe_verdict(run_dir: str, study: str = "laptop") -> str:
    """The probe run's training seconds at step 33 against the `study`'s pilot's, and whether its seeds may run here."""
    from minipods.checkpoint import RunError, read_log

    try:
        rows = read_log(Path(run_dir) / "metrics.jsonl")
    except RunError as e:
        raise ValueError(str(e)) from e
    row = next((r for r in rows if r.get("step") == PROBE_STEPS and "elapsed_s" in r), None)
    if row is None:
        raise ValueError(f"{run_dir}: no step {PROBE_STEPS} in metrics.jsonl (run the probe command to the end)")
    pilot = PILOTS[study]
    ratio = row["elapsed_s"] / pilot.probe_s
    ok = ratio <= PROBE_TOLERANCE
    return (f"probe: {PROBE_STEPS} steps in {row['elapsed_s']:.0f} s of training, the {study} study's pilot's machine "
            f"{pilot.probe_s:.0f} s ({ratio:.2f}x); {'fit for' if ok else 'too slow for'} {study} study seeds "
            f"(at most {PROBE_TOLERANCE}x: {budget_steps(ratio, pilot)})")


def budget_steps(ratio: float, pilot: Pilot = PILOTS["laptop"]) -> str:
    """What the pilot's study budget buys at `ratio` times its probe time, by the pilots' GRPO steps."""
    return f"~{pilot.steps / ratio:.0f} GRPO steps in {pilot.budget_s:.0f} s, {pilot.who} {pilot.steps:g}"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python scripts/study_design.py", description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", type=int, default=10, help="planned seeds (default 10, the authors' runs per arm)")
    ap.add_argument("--ratio", type=float, default=1.3, help="the speed-up to resolve (default 1.3)")
    ap.add_argument("--log-ratios", default=None, help="measured per-seed log(grpo time / pods time), comma-separated "
                                                        "(default: the five-seed study's three)")
    ap.add_argument("--probe", default=None, metavar="DIR", help="read the probe run in DIR (see above) instead")
    ap.add_argument("--study-pilot", choices=sorted(PILOTS), default="laptop",
                    help="--probe: whose pilot's machine to compare with (default laptop; the class study: class)")
    ap.add_argument("--power-table", action="store_true", help="the class study's sizing and power table instead")
    ap.add_argument("--study", default="studies/laptop10", help="--power-table: the finished study measured")
    ap.add_argument("--pilots", action="append", metavar="DIR", help="--power-table: a merged study of --preset class "
                    "(compare --merge: the pilots', the reference class's), a column each; repeatable")
    args = ap.parse_args(argv)
    if args.power_table:
        try:
            print(class_report(args.study, args.pilots))
        except (OSError, ValueError, KeyError) as e:
            ap.error(f"{type(e).__name__}: {e}")
        return 0
    if args.probe:
        try:
            print(probe_verdict(args.probe, args.study_pilot))
        except (OSError, ValueError) as e:
            ap.error(str(e))
        from minipods.measure.speed import machine_limits  # torch: only here
        lim = machine_limits()
        print(f"this machine now ({lim['threads']} threads): fp32 GEMM {lim['fp32_tflops']:.3f} TFLOP/s, "
              f"memory {lim['mem_gbs']:.1f} GB/s (docs/performance.md's sittings: 0.15-0.18 TFLOP/s, 32-43 GB/s)")
        return 0
    try:
        logs = [float(x) for x in args.log_ratios.split(",")] if args.log_ratios else None
    except ValueError:
        ap.error(f"--log-ratios must be comma-separated numbers, got {args.log_ratios!r}")
    if args.seeds < 2 or args.ratio <= 1 or (logs is not None and len(logs) < 2):
        ap.error("--seeds must be >= 2, --ratio > 1 and --log-ratios at least two values")
    print(report(args.seeds, args.ratio, log_ratios=logs))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
