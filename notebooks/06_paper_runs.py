# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 06 · The paper's own runs, re-analysed
#
# **Question.** The paper (Xu, Savani, Fang, Kolter, *Not All Rollouts are Useful: Down-Sampling Rollouts
# in LLM Reinforcement Learning*, TMLR 2026) trains Qwen2.5-3B-Instruct for six hours on one L40S, ten
# times per setting. Its authors published every run's evaluations. With them we can check the paper's
# claims with the statistics minipods uses for its own runs, **the run as the unit**: how strongly do
# ten runs support each claim?
#
# **Time here**: a few seconds (no model, no training: only the released numbers); the last cell prints
# this run's total. SMALL mode changes nothing.
#
# **The data** (`minipods/analysis/data/`, Apache-2.0, provenance in its README): 14 settings × 10 runs ×
# 12 checkpoints (one every 30 minutes of training wall-clock), each checkpoint evaluated on GSM8K
# (1,319 questions), MATH500 and AMC23, five sampled repeats averaged, plus the untrained models.
# `minipods.analysis.paper_runs` reads it into the same structure as a `compare` study: run → setting →
# evaluations (seconds, steps, accuracy), each run starting with the base model's evaluation at 0 s.
#
# **One caveat for every paired number below.** Run *k* of two settings share nothing we know of (they
# are independent runs, not one seed through two arms), so "paired by run" pairs arbitrarily: a test
# on such pairs stays valid, but pairing does not sharpen it as it does for minipods' seeds.

# %%
import os, time, warnings
from pathlib import Path

import minipods  # installed by scripts/setup.sh (pip install -e .)

import numpy as np
import matplotlib.pyplot as plt

warnings.filterwarnings("ignore", category=FutureWarning)
SMALL = os.environ.get("MINIPODS_NB_SMALL") == "1"  # tiny sizes (the test suite sets this); nothing to shrink here
T0 = time.perf_counter()
print(f"{'SMALL' if SMALL else 'full'} mode | numpy {np.__version__} | no model: the paper's released numbers only")
from minipods.analysis import paper_runs as P
from minipods.analysis.stats import mean_interval
from minipods.analysis.summary import difference, format_difference, summarize_study, time_to_target
from IPython.display import Markdown, display


def pct(m):
    """A mean_interval of accuracies as 'mean [lo, hi]' in %."""
    return f"{100 * m['mean']:.1f} [{100 * m['lo']:.1f}, {100 * m['hi']:.1f}]"

# %% [markdown]
# ## 0. The settings
#
# A setting's name is `<task>[-<rule>]-512-<n>-<m>`: n rollouts generated per prompt, m kept for the
# update (n = m is vanilla GRPO), the rule max-variance unless `Rand` (random) or `MaxR` (max-reward).
# One prompt per step; each run trains for six hours of wall-clock.

# %%
ROOT = Path(minipods.__file__).resolve().parent.parent
rows = P.read_rows()
study = P.paper_study("gsm8k", rows=rows)  # run -> setting -> Points (seconds, step, accuracy, n graded answers)
settings = sorted(study[1], key=lambda k: (P.setting(k)["task"] != "GSM8K", P.setting(k)["task"], P.setting(k)["rule"] != "max_variance",
                                           P.setting(k)["rule"], P.setting(k)["m"], P.setting(k)["n"]))
print(f"{P.CSV.relative_to(ROOT)}: {len(rows)} rows, {len(settings)} settings x {len(study)} runs; "
      f"untrained Qwen2.5-3B {100 * P.base_accuracy('gsm8k', rows=rows):.1f}% on GSM8K, "
      f"Llama {100 * P.base_accuracy('gsm8k', 'llama', rows=rows):.1f}%")
for name in settings:
    s, n_pts = P.setting(name), [len(arms[name]) - 1 for arms in study.values()]
    print(f"  {name:22s} task {s['task']:7s} rule {s['rule']:12s} n={s['n']:3d} m={s['m']:2d} | "
          f"{len(n_pts)} runs, {min(n_pts)}-{max(n_pts)} checkpoints each")
assert len(settings) == 14 and all(len(arms) == 14 for arms in study.values())
GRPO, PODS = "GSM8K-512-16-16", "GSM8K-512-64-16"
sweep_names = [k for k in settings if P.setting(k)["task"] == "GSM8K" and P.setting(k)["rule"] == "max_variance"]


# %% [markdown]
# **What one evaluation's noise is.** Each checkpoint's accuracy is the mean of five sampled answers
# per question, and the five repeats are in the data: their spread measures the noise of one
# evaluation directly. The binomial bound $\sqrt{t(1-t)/n}$ holds with n = the graded answers
# (questions × 5), which is the n the reader gives each evaluation (the time-to-target rule below
# uses it as its tolerance); with n = the questions it would be √5 ≈ 2.2 times as wide.

# %%
for bench in P.N_QUESTIONS:
    got = [r for r in rows if r["benchmark"] == bench and r["checkpoint"] > 0]
    measured = np.sqrt(np.mean([np.var(r["answer_acc_repeats"], ddof=1) / P.REPEATS for r in got]))
    t = np.array([r["answer_acc"] for r in got])
    bound = {k: np.sqrt(np.mean(t * (1 - t) / (P.N_QUESTIONS[bench] * k))) for k in (1, P.REPEATS)}
    print(f"{bench:8s} one evaluation's standard error: measured from the repeats {100 * measured:.2f} points | "
          f"binomial with n = answers {100 * bound[P.REPEATS]:.2f} | with n = questions {100 * bound[1]:.2f}")
    assert measured <= bound[P.REPEATS] < bound[1]

# %% [markdown]
# ## 1. GSM8K accuracy against wall-clock hours: GRPO vs PODS
#
# Vanilla GRPO (n = m = 16) against GRPO-PODS (n = 64 → m = 16, max-variance), the paper's Figure 1:
# each run thin, the mean over the ten runs bold, and the 95% t-interval of that mean across runs
# shaded (the run is the unit: the interval says where another ten runs' mean could land). Every
# interval comes from `minipods.analysis.summary`, as for a `compare` study: `P.by_hours(study, h)`
# is the study as it stood after h hours, so each run's final evaluation there is its accuracy at h.

# %%
HOURS = [h / 2 for h in range(1, 13)]  # the checkpoints: every 30 minutes (0 h is the base model)
two = P.only(study, [GRPO, PODS])
at = {h: summarize_study(P.by_hours(two, h), baseline=None, focus=PODS) for h in HOURS}

fig, ax = plt.subplots(figsize=(8, 4))
for arm, color in ((GRPO, "tab:blue"), (PODS, "tab:orange")):
    for by in two.values():
        ax.plot([p.seconds / 3600 for p in by[arm]], [p.accuracy for p in by[arm]], color=color, lw=0.6, alpha=0.4)
    b = [at[h]["final"][arm] for h in HOURS]
    ax.plot(HOURS, [x["mean"] for x in b], color=color, lw=2.5, label=f"{arm}: mean of 10 runs")
    ax.fill_between(HOURS, [x["lo"] for x in b], [x["hi"] for x in b], color=color, alpha=0.2)
ax.set_xlim(0, 6.1); ax.set_ylim(0.74, 0.85); ax.set_xlabel("training wall-clock (hours)"); ax.set_ylabel("GSM8K accuracy")
ax.set_title(f"each run thin, mean bold, 95% interval across runs (all start at the base model's "
             f"{100 * P.base_accuracy('gsm8k', rows=rows):.1f}% at 0 h)", fontsize=10)
ax.legend(loc="lower right"); plt.tight_layout(); plt.show()

# %%
ahead = []
for h in HOURS:
    g, q, d = at[h]["final"][GRPO], at[h]["final"][PODS], at[h]["versus"][GRPO]
    print(f"{h:3.1f} h | GRPO {pct(g)} | PODS {pct(q)} | PODS minus GRPO {format_difference(d, per_seed=False)}")
    ahead.append(d["seeds"]["lo"] > 0)
later = [h for h in HOURS if h >= 1]
print(f"PODS's mean is above GRPO's at {sum(at[h]['final'][PODS]['mean'] > at[h]['final'][GRPO]['mean'] for h in later)} "
      f"of the {len(later)} checkpoints from 1 h on; its lead's interval clears 0 at {sum(ahead)} of {len(HOURS)}: "
      f"{', '.join(f'{h:g} h' for h, a in zip(HOURS, ahead) if a)}")
assert all(at[h]["final"][PODS]["mean"] > at[h]["final"][GRPO]["mean"] for h in later)

# %% [markdown]
# (The summary's lines say "seeds": here each seed is one of the paper's runs.)
#
# ## 2. Time to GRPO's peak: "1.7-2x sooner"?
#
# **The paper's way**: average the runs into one curve per setting, take 99% of GRPO's mean-curve peak
# as the target, and read off when each mean curve first reaches it (`P.mean_curve` gives the curves
# as one pseudo-run; `time_to_target` with that declared target reads them; a mean of runs is no one
# evaluation, so no tolerance). Checkpoints are 30 minutes apart, so each time is a multiple of 0.5 h.

# %%
paper_way = {0: {a: P.mean_curve(two, a) for a in (GRPO, PODS)}}
peak = max(p.accuracy for p in paper_way[0][GRPO])
paper_t = {}
for frac in (0.99, 1.0):
    t = time_to_target(paper_way, GRPO, target=frac * peak)["arms"]
    paper_t[frac] = {a: t[a]["per_seed"][0]["seconds"] / 3600 for a in (GRPO, PODS)}
    print(f"target {frac:.0%} of GRPO's mean peak ({100 * frac * peak:.1f}%): GRPO's mean curve at "
          f"{paper_t[frac][GRPO]:.1f} h, PODS's at {paper_t[frac][PODS]:.1f} h: "
          f"{paper_t[frac][GRPO] / paper_t[frac][PODS]:.1f}x sooner")
assert paper_t[0.99][GRPO] / paper_t[0.99][PODS] >= 1.7  # the paper's claim, read the paper's way

# %% [markdown]
# **Per run, with an interval over runs.** `time_to_target` reads each run on its own: an arm reaches
# the target at its first evaluation within one evaluation's standard error below it; a run that
# never does stays in as censored (its speed-up enters at its bound); the speed-up is the geometric
# mean of the per-run ratios with a t-interval on their logs. Two targets:
# * **robust** (the summary's rule): each run's target is GRPO's plateau in that run, the mean of its
#   last two evaluations, not its best one (a maximum of noisy evaluations is biased up, and GRPO
#   meets its own maximum by construction);
# * **the paper's**, declared: 99% of GRPO's mean-curve peak above, the same for every run.
#
# Run k of GRPO and run k of PODS are paired only by their number (see the caveat at the top).

# %%
speedups = {}
for name, target in (("robust: each run's GRPO plateau", None), ("the paper's: 99% of GRPO's mean peak", 0.99 * peak)):
    t = time_to_target(two, GRPO, target=target)
    speedups[name] = sp = t["arms"][PODS]["speedup"]
    print(f"{name}: PODS {sp['ratio']:.2f}x sooner [{sp['lo']:.2f}, {sp['hi']:.2f}] over {sp['k']} runs "
          f"(sign-flip p {sp['p']:.2g}; {t['arms'][PODS]['censored']} censored)")
    for a in (GRPO, PODS):
        r = t["arms"][a]
        cells = [("never" if v["seconds"] is None else f"{v['seconds'] / 3600:.1f}") for v in r["per_seed"].values()]
        print(f"   {a:16s} hours to target per run: {' '.join(f'{c:>5s}' for c in cells)} | restricted mean "
              f"{r['restricted_s']['mean'] / 3600:.2f} h, {r['restricted_step']['mean']:.0f} steps ({r['reached']}/{r['of']} reached)")

# %%
def verdict_speedup(sp):
    inside = [x for x in (1.7, 2.0) if sp["lo"] <= x <= sp["hi"]]
    return (f"{sp['ratio']:.2f}x [{sp['lo']:.2f}, {sp['hi']:.2f}]: "
            + (f"holds {' and '.join(f'{x:g}x' for x in inside)}" if inside else "excludes 1.7-2x")
            + ("; excludes 1x (no speed-up)" if sp["lo"] > 1 else "; includes 1x (no speed-up)"))


for name, sp in speedups.items():
    print(f"{name:40s} {verdict_speedup(sp)}")
robust, papers = speedups["robust: each run's GRPO plateau"], speedups["the paper's: 99% of GRPO's mean peak"]
assert papers["lo"] <= 1.7 <= papers["hi"] and robust["hi"] < 1.7  # the two readings part on the claim
drop = {a: mean_interval([max(p.accuracy for p in by[a]) - np.mean([p.accuracy for p in by[a][-2:]]) for by in two.values()])
        for a in (GRPO, PODS)}
print(f"So: the paper's way gives {paper_t[0.99][GRPO] / paper_t[0.99][PODS]:.1f}x; run by run with the same target "
      f"{papers['ratio']:.2f}x, an interval from {papers['lo']:.2f}x to {papers['hi']:.2f}x; with GRPO's per-run plateau "
      f"{robust['ratio']:.2f}x. Why the plateau target is easier for GRPO: a run's peak minus its plateau is "
      f"{100 * drop[GRPO]['mean']:.1f} points [{100 * drop[GRPO]['lo']:.1f}, {100 * drop[GRPO]['hi']:.1f}] for GRPO, "
      f"{100 * drop[PODS]['mean']:.1f} [{100 * drop[PODS]['lo']:.1f}, {100 * drop[PODS]['hi']:.1f}] for PODS: GRPO falls back more.")
assert drop[GRPO]["mean"] > drop[PODS]["mean"]

# %% [markdown]
# The whole summary of these two settings, as `python -m minipods.compare` writes its `summary.md` (the
# same `summary_lines`), with the runs' times in hours: the robust time to target per run, with steps.

# %%
from minipods.analysis.summary import summary_lines

in_hours = {r: {a: [p._replace(seconds=p.seconds / 3600) for p in pts] for a, pts in by.items()} for r, by in two.items()}
configs = {a: {"n": P.setting(a)["n"], "m": P.setting(a)["m"]} for a in (GRPO, PODS)}
display(Markdown("\n".join(summary_lines(summarize_study(in_hours, GRPO, PODS), configs, unit="h")[2:])))

# %% [markdown]
# ## 3. The n-sweep and the m-sweep at fixed wall-clock budgets
#
# The paper: accuracy against n (at m = 16) is single-peaked, up while more rollouts find more
# informative groups, then down as each step gets slower. Here every setting's accuracy after 2, 4
# and 6 hours, mean over runs with its 95% interval; then where the means peak, and whether that peak
# is above both ends of the sweep beyond the run-to-run noise (the peak minus each end, per-run
# differences: t-interval and sign-flip p). The peak is chosen after looking, which biases its lead
# up: a "no" is firm, a "yes" would be generous.

# %%
BUDGETS = (2.0, 4.0, 6.0)
SWEEPS = {"n": sorted((k for k in sweep_names if P.setting(k)["m"] == 16), key=lambda k: P.setting(k)["n"]),
          "m": sorted((k for k in sweep_names if P.setting(k)["n"] == 64), key=lambda k: P.setting(k)["m"])}
budget = {(v, h): summarize_study(P.by_hours(P.only(study, ks), h), baseline=None, focus=PODS)
          for v, ks in SWEEPS.items() for h in BUDGETS}
fig, axes = plt.subplots(1, 2, figsize=(11, 3.8), sharey=True)
for ax, (v, ks) in zip(axes, SWEEPS.items()):
    xs = [P.setting(k)[v] for k in ks]
    for h, dx in zip(BUDGETS, (0.96, 1.0, 1.04)):
        f = [budget[v, h]["final"][k] for k in ks]
        ax.errorbar([x * dx for x in xs], [100 * m["mean"] for m in f], capsize=3, marker="o", label=f"after {h:g} h",
                    yerr=[[100 * (m["mean"] - m["lo"]) for m in f], [100 * (m["hi"] - m["mean"]) for m in f]])
    ax.set_xscale("log", base=2); ax.set_xticks(xs, [str(x) for x in xs])
    ax.set_xlabel(f"{v} ({'m = 16' if v == 'n' else 'n = 64'})"); ax.legend(fontsize=8)
axes[0].set_ylabel("GSM8K accuracy % (mean, 95% CI over runs)"); fig.suptitle("accuracy at fixed wall-clock budgets")
plt.tight_layout(); plt.show()

# %%
peaked = {}
for (v, h), b in budget.items():
    ks, cut = SWEEPS[v], P.by_hours(P.only(study, SWEEPS[v]), h)
    top = max(ks, key=lambda k: b["final"][k]["mean"])
    print(f"{v}-sweep after {h:g} h: " + " | ".join(f"{v}={P.setting(k)[v]} {pct(b['final'][k])}" for k in ks))
    ends = {k: difference(cut, k, top) for k in (ks[0], ks[-1]) if k != top}
    for k, d in ends.items():
        print(f"   the peak ({v}={P.setting(top)[v]}) minus {v}={P.setting(k)[v]}: {format_difference(d, per_seed=False)}")
    clear = {k: d["seeds"]["lo"] > 0 for k, d in ends.items()}
    peaked[v, h] = len(ends) == 2 and all(clear.values())
    print("   -> " + ("a single peak inside the sweep, above both ends beyond the run-to-run noise" if peaked[v, h] else
                      f"peak at the end {v}={P.setting(top)[v]}" if len(ends) < 2 else
                      "a peak inside the sweep, but not clear of " + " and ".join(
                          f"{v}={P.setting(k)[v]}" for k, ok in clear.items() if not ok)))
m2_behind = [h for h in BUDGETS if difference(P.by_hours(P.only(study, SWEEPS["m"]), h), SWEEPS["m"][0],
                                              max(SWEEPS["m"], key=lambda k: budget["m", h]["final"][k]["mean"]))["seeds"]["lo"] > 0]
print(f"m = 2 below the m-sweep's peak beyond the noise after {', '.join(f'{h:g} h' for h in m2_behind) or 'no budget'}")
print("single-peaked beyond the noise (the peak chosen after looking, so this is generous): "
      f"{', '.join(f'{v} after {h:g} h' for (v, h), ok in peaked.items() if ok) or 'at no budget'}")

# %% [markdown]
# ## 4. The rules: max-variance vs random vs max-reward (n = 64 → m = 16)
#
# The paper: max-variance beats random down-sampling (slightly) and max-reward (clearly). Is
# max-variance's lead over random outside the run-to-run noise? Max-variance minus each rule after 2,
# 4 and 6 hours, with the run as the unit.

# %%
RAND, MAXR = "GSM8K-Rand-512-64-16", "GSM8K-MaxR-512-64-16"
rules = {h: summarize_study(P.by_hours(P.only(study, [PODS, RAND, MAXR]), h), baseline=None, focus=PODS) for h in BUDGETS}
for h, b in rules.items():
    print(f"after {h:g} h: max-variance {pct(b['final'][PODS])} | random {pct(b['final'][RAND])} | "
          f"max-reward {pct(b['final'][MAXR])}")
    for k in (RAND, MAXR):
        print(f"   max-variance minus {k}: {format_difference(b['versus'][k], per_seed=False)}")
over_rand = [h for h, b in rules.items() if b["versus"][RAND]["seeds"]["lo"] > 0]
print(f"max-variance's lead over random is outside the run-to-run noise after "
      f"{', '.join(f'{h:g} h' for h in over_rand) or 'no budget'} (of {', '.join(f'{h:g} h' for h in BUDGETS)}); "
      f"over max-reward after every budget: {all(b['versus'][MAXR]['seeds']['lo'] > 0 for b in rules.values())}")
assert all(b["versus"][MAXR]["seeds"]["lo"] > 0 and b["versus"][RAND]["seeds"]["mean"] > 0 for b in rules.values())

# %% [markdown]
# ## 5. The cost of a step, from the checkpoints' step counts
#
# A checkpoint records the steps done in its 30 minutes, so each run gives its mean seconds per step
# (6 h × 3600 / its steps at 6 h). The released configuration trains **one prompt per step**, which
# generates n rollouts and updates on m, so a plane `seconds = c + b_n n + b_m m`, fitted by least
# squares over the runs of the eight max-variance GSM8K settings (`P.fit_step_cost`), prices one more
# generated rollout (b_n), one more kept rollout (b_m) and what a step costs besides (c). minipods' cost
# model once derived its two lines from the paper's two step times alone (GRPO 7.5 s, PODS 10.1 s), with
# 8 prompts a step and through zero (no fixed cost); we price every setting with both. It now holds this
# plane (`minipods.measure.costmodel.L40S_FIT`, `paper_l40s_model`, used by the planner). The other tasks, models and rules are listed
# beside them (the plane is fitted to, and only priced for, the max-variance GSM8K settings).

# %%
from minipods.measure import costmodel

per_run = P.seconds_per_step(study)  # setting -> each run's seconds per step
fit = P.fit_step_cost({k: per_run[k] for k in sweep_names})
T = costmodel.PAPER_L40S  # the two step times: lines through zero, 8 prompts a step
b_r = (T["pods_s"] - T["grpo_s"]) / (8 * (T["n"] - T["m"]))
old = costmodel.CostModel(costmodel.Line(0.0, b_r), costmodel.Line(0.0, (T["grpo_s"] - 8 * T["m"] * b_r) / (8 * T["m"])))
length = {k: np.mean([r["mean_length"] for r in rows if r["config"] == k and r["benchmark"] == "gsm8k"]) for k in settings}
print(f"plane over {fit['runs']} runs: s/step = {fit['c']:.2f} + {fit['b_n']:.4f} n + {fit['b_m']:.4f} m (R² {fit['r2']:.3f})")
print(f"  {'setting':22s} {'s/step [95% CI over runs]':>27s} | plane | two step times | GSM8K answer length")
for k in settings:
    s, iv = P.setting(k), mean_interval(per_run[k])
    plane = f"{fit['c'] + fit['b_n'] * s['n'] + fit['b_m'] * s['m']:5.2f}" if k in sweep_names else "    -"
    today = old.step_seconds(s["n"], s["m"], prompts=8)["pods"]  # its lines assume 8 prompts a step
    print(f"  {k:22s} {iv['mean']:8.2f} [{iv['lo']:5.2f}, {iv['hi']:5.2f}] | {plane} | {today:16.2f} | {length[k]:.0f} tokens")

# %%
fig, axes = plt.subplots(1, 2, figsize=(11, 3.8), sharey=True)
for ax, (vary, fixed, value) in zip(axes, (("n", "m", 16), ("m", "n", 64))):
    ks = sorted((k for k in sweep_names if P.setting(k)[fixed] == value), key=lambda k: P.setting(k)[vary])
    xs = [P.setting(k)[vary] for k in ks]
    for x, k in zip(xs, ks):
        ax.plot([x] * len(per_run[k]), per_run[k], "o", color="grey", alpha=0.4, ms=4)
    ax.plot(xs, [np.mean(per_run[k]) for k in ks], "o", color="k", ms=7, label="mean of 10 runs")
    grid = np.linspace(min(xs), max(xs), 50)
    ax.plot(grid, [fit["c"] + fit["b_" + vary] * x + fit["b_" + fixed] * value for x in grid], "-", label="plane fitted to all runs")
    ax.plot(grid, [old.step_seconds(*((x, value) if vary == "n" else (value, x)), prompts=8)["pods"] for x in grid],
            "--", label="two step times (no fixed cost)")
    ax.set_xscale("log", base=2); ax.set_xticks(xs, [str(x) for x in xs])
    ax.set_xlabel(f"{vary} ({fixed} = {value})"); ax.legend(fontsize=8)
axes[0].set_ylabel("seconds per step (one L40S)"); fig.suptitle("what a step costs, from the checkpoints' step counts")
plt.tight_layout(); plt.show()

# %%
cost = {k: mean_interval(per_run[k]) for k in settings}
plane = {k: fit["fitted"][k] for k in sweep_names}
inside = [k for k in sweep_names if cost[k]["lo"] <= plane[k] <= cost[k]["hi"]]
print(f"the plane lies inside {len(inside)} of the {len(sweep_names)} settings' intervals (R² {fit['r2']:.2f} over single runs); "
      f"GRPO {cost[GRPO]['mean']:.2f} s and PODS {cost[PODS]['mean']:.2f} s a step, the paper's 7.5 and 10.1")
print(f"one more generated rollout costs {fit['b_n']:.3f} s, one more kept rollout {fit['b_m']:.3f} s "
      f"({fit['b_m'] / fit['b_n']:.1f}x), and a step {fit['c']:.1f} s besides: at n = 64 -> m = 16 generation is "
      f"{fit['b_n'] * 64:.1f} s, the kept rollouts' share {fit['b_m'] * 16:.1f} s, the fixed part {fit['c']:.1f} s")
m2 = "GSM8K-512-64-2"
print(f"the two step times price n = 64 -> m = 2 at {old.step_seconds(64, 2, prompts=8)['pods']:.1f} s; the runs took "
      f"{cost[m2]['mean']:.1f} s [{cost[m2]['lo']:.1f}, {cost[m2]['hi']:.1f}]: without a fixed cost, fewer kept rollouts look far cheaper than they are")
print(f"other rules at n = 64 -> m = 16: random {cost[RAND]['mean']:.1f} s, max-reward {cost[MAXR]['mean']:.1f} s a step "
      f"(its answers are longer: {length[MAXR]:.0f} tokens against {length[PODS]:.0f}); Llama {cost['Llama-512-16-16-0.04']['mean'] / cost[GRPO]['mean']:.1f}x Qwen's GRPO step")
assert len(inside) == len(sweep_names) and fit["r2"] > 0.9 and abs(cost[GRPO]["mean"] - 7.5) < 0.15 and abs(cost[PODS]["mean"] - 10.1) < 0.15
assert old.step_seconds(64, 2, prompts=8)["pods"] < cost[m2]["lo"] and cost[MAXR]["lo"] > cost[PODS]["hi"]
assert all(abs(costmodel.paper_l40s_model().step_seconds(s["n"], s["m"])["pods"] - plane[k]) < 0.01  # the planner's lines
           for k, s in ((k, P.setting(k)) for k in sweep_names))

# %% [markdown]
# ## 6. Transfer: other test sets, another task, another model (briefly)
#
# The same GRPO-vs-PODS reading, one line each: the GSM8K-trained runs tested on MATH500 and AMC23;
# the runs trained on MATH (GRPO n = m = 8 against PODS n = 32 → m = 8, tested on MATH500); and the
# Llama runs (n = m = 16 against 64 → 16, GSM8K only). For each: PODS minus GRPO after 2 and 6 hours,
# the paper's-way speed-up (mean curves, 99% of GRPO's mean peak), and per run, with the robust and
# the paper's target.

# %%
def read_pair(bench, g, q):
    """PODS minus GRPO on one test set: differences at 2 h and 6 h, and the three speed-ups (None:
    no target, when the untrained model already meets it)."""
    st = P.only(P.paper_study(bench, [g, q], rows=rows), [g, q])
    mean = {0: {a: P.mean_curve(st, a) for a in (g, q)}}
    top = 0.99 * max(p.accuracy for p in mean[0][g])
    t = time_to_target(mean, g, target=top)["arms"]
    sec = {a: t[a]["per_seed"][0]["seconds"] if a in t else None for a in (g, q)}
    way = ("no target (the base model meets it)" if not t else "never (PODS's mean curve stays below)"
           if sec[q] is None else f"{sec[g] / sec[q]:.1f}x ({sec[g] / 3600:g} h vs {sec[q] / 3600:g} h)")
    return {"diff": {h: difference(P.by_hours(st, h), g, q)["seeds"] for h in (2.0, 6.0)}, "paper_way": way,
            "robust": time_to_target(st, g)["arms"].get(q, {}).get("speedup"),
            "paper_target": time_to_target(st, g, target=top)["arms"].get(q, {}).get("speedup")}


# %%
def sx(s, censored=0):
    """A speed-up's ratio_interval; censored seeds (never reached: entered at the run's end) make it an upper bound, ≤."""
    return "no target (the base model meets it)" if s is None or s["ratio"] is None else \
        f"{'≤' if censored else ''}{s['ratio']:.2f}x [{s['lo']:.2f}, {s['hi']:.2f}]"


PAIRS = {"GSM8K-trained, on GSM8K": ("gsm8k", GRPO, PODS), "GSM8K-trained, on MATH500": ("math500", GRPO, PODS),
         "GSM8K-trained, on AMC23": ("amc23", GRPO, PODS), "MATH-trained, on MATH500": ("math500", "MATH-NF-512-8-8", "MATH-NF-512-32-8"),
         "Llama, on GSM8K": ("gsm8k", "Llama-512-16-16-0.04", "Llama-512-64-16-0.04")}
pairs = {label: read_pair(*args) for label, args in PAIRS.items()}
for label, r in pairs.items():
    print(f"{label}: PODS minus GRPO " + ", ".join(f"after {h:g} h {100 * d['mean']:+.1f} [{100 * d['lo']:+.1f}, {100 * d['hi']:+.1f}] "
                                                   f"(p {d['p']:.2g})" for h, d in r["diff"].items()))
    print(f"   speed-up: paper's way {r['paper_way']}, per run robust "
          f"{sx(r['robust'])}, per run paper's target {sx(r['paper_target'])}")

# %%
clear6 = [label for label, r in pairs.items() if r["diff"][6.0]["lo"] > 0]
faster = [label for label, r in pairs.items() if r["robust"] and r["robust"]["lo"] and r["robust"]["lo"] > 1]
slower = [label for label, r in pairs.items() if r["robust"] and r["robust"]["hi"] and r["robust"]["hi"] < 1]
print(f"PODS ahead after 6 h beyond the run-to-run noise: {'; '.join(clear6) or 'none'}")
print(f"PODS sooner to GRPO's plateau beyond the noise (per run, robust): {'; '.join(faster) or 'none'}; "
      f"later: {'; '.join(slower) or 'none'}")
llama = {a: P.mean_curve(P.only(study, [a]), a) for a in PAIRS["Llama, on GSM8K"][1:]}
for a, curve in llama.items():
    top = max(curve, key=lambda p: p.accuracy)
    print(f"{a}: its mean curve peaks at {top.seconds / 3600:g} h ({100 * top.accuracy:.1f}%) and is at "
          f"{100 * curve[-1].accuracy:.1f}% at {curve[-1].seconds / 3600:g} h (the last checkpoint every run has)")
    assert curve[-1].accuracy < top.accuracy - 0.05  # both Llama settings fall back after their peak
assert "GSM8K-trained, on MATH500" in clear6 and "Llama, on GSM8K" in slower

# %% [markdown]
# ## 7. The paper's runs vs this laptop
#
# The same summary (`summarize_study`) over the paper's GRPO and PODS runs and over a laptop study.
# **The laptop study on the paper's design** (`studies/laptop10`, in the repository: ten seeds of
# `python -m minipods.compare --preset laptop`, SmolLM2-135M on a 2-core CPU, one prompt a step, GRPO
# n = m = 4 vs PODS n = 16 → 4 and random 16 → 4, every kept row paid, 900 s of training) fills its column
# from its run folders; point `MINIPODS_NB_LAPTOP_DIR` at another `compare --seeds` folder (an absolute
# path) to read that one instead. Beside them, labelled as a different design, the
# five-seed study of docs/results.md (SmolLM2-135M on a 2-core CPU, synthetic problems, GRPO n = m = 4
# vs PODS n = 8 → 4, 4 prompts a step, 32 steps), read from that page's per-seed table of first and
# final accuracies (its run folders are not in the repository, so its times cannot be re-read).

# %%
import json, math, re
from minipods.analysis.results import read_study, seed_dirs
from minipods.analysis.summary import Point


def five_seed_study(path=ROOT / "docs" / "results.md"):
    """seed -> arm -> [first, final] evaluation, from the five-seed study's learning table (accuracy only)."""
    lines = path.read_text().splitlines()
    head = next(i for i, line in enumerate(lines) if line.startswith("| seed | grpo | grpo_same_n |"))
    arms, out = [c.strip() for c in lines[head].strip("|").split("|")][1:], {}
    for line in lines[head + 2:head + 7]:
        cells = [c.strip() for c in line.strip("|").split("|")]
        out[int(cells[0])] = {a: [Point(math.nan, step, float(x) / 100, 128) for step, x in
                                  zip((0, 32), re.match(r"([\d.]+) → ([\d.]+)", c).groups())] for a, c in zip(arms, cells[1:])}
    return out


# %%
laptop_dir = os.environ.get("MINIPODS_NB_LAPTOP_DIR") or ROOT / "studies" / "laptop10"
if not (Path(laptop_dir) / "comparison.json").is_file():
    laptop_dir = None  # an installed package without the repository's studies/
if laptop_dir:
    meta = json.loads((Path(laptop_dir) / "comparison.json").read_text())
    laptop = summarize_study(read_study(seed_dirs(laptop_dir, meta)),
                             meta.get("baseline", "grpo"), "pods_max_variance")

# %%
def column(s, g, q):
    """A summary's cells: GRPO and PODS final accuracy, PODS minus GRPO, PODS's learning, the robust speed-up."""
    v, learn = s["versus"][g]["seeds"], s["learning"][q]["seeds"]
    t = s["time"]["arms"].get(q, {}) if s["time"] else {}
    return [f"{len(s['seeds'])}", pct(s["final"][g]), pct(s["final"][q]),
            f"{100 * v['mean']:+.1f} [{100 * v['lo']:+.1f}, {100 * v['hi']:+.1f}], p {v['p']:.2g}",
            f"{100 * learn['mean']:+.1f} [{100 * learn['lo']:+.1f}, {100 * learn['hi']:+.1f}]", sx(t.get("speedup"), t.get("censored")) if s["time"] else "-"]


ROWS = ["runs (seeds)", "GRPO final accuracy %", "PODS final accuracy %", "PODS minus GRPO, final (points, sign-flip p)",
        "PODS's learning, first to final (points)", "PODS's speed-up to GRPO's plateau (per run)"]
cols = {"the paper's runs (Qwen2.5-3B, one L40S, 6 h)": column(summarize_study(two, GRPO, PODS), GRPO, PODS),
        "laptop, the paper's design": column(laptop, "grpo", "pods_max_variance") if laptop_dir else ["not in this checkout"] * len(ROWS),
        "five-seed study, docs/results.md (a different design)": column(
            summarize_study(five_seed_study(), None, "pods_max_variance"), "grpo", "pods_max_variance")}
table = ["| | " + " | ".join(cols) + " |", "|---|" + "---:|" * len(cols)]
table += [f"| {r} | " + " | ".join(c[i] for c in cols.values()) + " |" for i, r in enumerate(ROWS)]
display(Markdown("\n".join(table)))

# %%
def reading(s, g, q):
    v = s["versus"][g]["seeds"]
    return "PODS ahead" if v["lo"] > 0 else "GRPO ahead" if v["hi"] < 0 else "level within the noise"


studies = {"the paper's runs": (summarize_study(two, GRPO, PODS), GRPO, PODS),
           "the five-seed study": (summarize_study(five_seed_study(), None, "pods_max_variance"), "grpo", "pods_max_variance")}
if laptop_dir:
    studies["the laptop study"] = (laptop, "grpo", "pods_max_variance")
said = {name: (reading(*args), args[0]["learning"][args[2]]["seeds"]["lo"] > 0) for name, args in studies.items()}
for name, (end, learns) in said.items():
    print(f"{name}: at the end, {end}; PODS learns beyond the noise: {learns}")
paper, others = said["the paper's runs"], {k: v for k, v in said.items() if k != "the paper's runs"}
for name, (end, learns) in others.items():
    print(f"{name} vs the paper's runs: {'agree' if end == paper[0] else 'differ'} at the end ({end} vs {paper[0]}); "
          f"{'agree' if learns == paper[1] else 'differ'} on whether PODS learns")
if laptop_dir:  # the paper's ablation too: max-variance against random selection, the same n and m
    lt = laptop["time"]["arms"]["pods_random"]
    print(f"the laptop study: max-variance minus random, final {format_difference(laptop['versus']['pods_random'], per_seed=False)}; "
          f"random reached GRPO's plateau on {lt['reached']} of "
          f"{len(laptop['seeds'])} seeds (max-variance {laptop['time']['arms']['pods_max_variance']['reached']})")

# %% [markdown]
# ## 8. Takeaways
#
# Ten runs per setting make the paper's claims checkable, and the answer depends on how a claim is
# read: the mean curves give the paper's numbers; the same runs read one by one, with intervals over
# runs, give wider and sometimes smaller ones. The card below is assembled from this notebook's cells.

# %%
d6 = at[6.0]["versus"][GRPO]["seeds"]
card = f"""**On a card** (the paper's released runs; intervals are 95% over runs).

* PODS (n = 64 → m = 16) vs GRPO (n = m = 16) on GSM8K: PODS's mean is higher at every checkpoint from 1 h; after 6 h \
{100 * d6['mean']:+.1f} points [{100 * d6['lo']:+.1f}, {100 * d6['hi']:+.1f}] (sign-flip p {d6['p']:.2g}).
* "1.7-2x sooner": the paper's way (mean curves, 99% of GRPO's peak) {paper_t[0.99][GRPO] / paper_t[0.99][PODS]:.1f}x; \
per run with that target {sx(papers)}; per run with GRPO's own plateau as the target {sx(robust)}.
* n-sweep and m-sweep: single-peaked beyond the noise {', '.join(f'{v} after {h:g} h' for (v, h), ok in peaked.items() if ok) or 'at no budget'}; \
m = 2 is below the m-sweep's peak beyond the noise after \
{', '.join(f'{h:g} h' for h in m2_behind) or 'no budget'}.
* Rules after 2 h: max-variance minus random {100 * rules[2.0]['versus'][RAND]['seeds']['mean']:+.1f} points, \
minus max-reward {100 * rules[2.0]['versus'][MAXR]['seeds']['mean']:+.1f}; the lead over random is clear of the noise \
after {', '.join(f'{h:g} h' for h in over_rand) or 'no budget'}.
* A step on the L40S: {fit['c']:.1f} s + {fit['b_n']:.3f} s per generated rollout + {fit['b_m']:.3f} s per kept one \
(R² {fit['r2']:.2f}); the cost model's two-point lines miss the fixed {fit['c']:.1f} s.
* Transfer: PODS ahead after 6 h on {'; '.join(clear6) or 'none'}; sooner per run (robust) on {'; '.join(faster) or 'none'}; \
later on {'; '.join(slower) or 'none'}."""
if laptop_dir:
    card += (f"\n* The laptop study on the paper's design ({len(laptop['seeds'])} seeds, SmolLM2-135M, 900 s): PODS minus GRPO "
             f"{format_difference(laptop['versus']['grpo'], per_seed=False)}; speed-up to GRPO's plateau "
             f"{sx(*map(laptop['time']['arms']['pods_max_variance'].get, ('speedup', 'censored')))}; max-variance minus random "
             f"{format_difference(laptop['versus']['pods_random'], per_seed=False)}.")
display(Markdown(card))

# %%
print(f"notebook ran in {time.perf_counter() - T0:.0f} s ({'SMALL' if SMALL else 'full'} mode)")
