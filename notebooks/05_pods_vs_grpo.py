# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 05 · PODS vs. GRPO: accuracy against wall-clock time
#
# **Question.** What does one PODS step cost against one GRPO step on this machine and on the paper's
# GPU, how much better must a PODS step be for PODS to win on wall-clock time, and what can a small
# comparison here show about it?
#
# **Time here**: several minutes in full mode on a 2-core CPU, well under a minute in small mode; the
# last cell prints this run's total.
#
# The paper's headline (Xu, Savani, Fang, Kolter, *Not All Rollouts are Useful: Down-Sampling Rollouts in LLM Reinforcement Learning*, TMLR 2026, Fig. 1, Sec. 5): on one L40S GPU with Qwen2.5-3B-Instruct on
# GSM8K, GRPO-PODS generating $n = 64$ rollouts and updating on the $m = 16$ of maximal reward variance
# reaches vanilla GRPO's ($n = m = 16$) peak test accuracy about **2× sooner in wall-clock time**
# (at least 1.7× across all the benchmarks and hardware settings the paper tests).
#
# Here we run the same comparison in miniature with `minipods.analysis.compare` (each arm is a
# `minipods.train` run with the same seed and data order) and draw it with `minipods.analysis.plots`.
# Then we read what it measured: accuracy (lenient and strict) with intervals and the paper's own metric
# (time to GRPO's level), what each arm's update paid for (the fast update leaves out rollouts whose
# advantage is 0, so the two arms do not pay for the same rows), a cost model fitted on this machine and
# the gap between it and the arms, the break-even gain here and on the paper's L40S, why the arms'
# fractions of silent (zero-std) groups came out as they did, and what the repository's five-seed study
# measured. **Every conclusion below is printed by a cell, computed from this run's numbers**, so it
# holds on whichever machine runs the notebook; the card at the end is assembled from them too.
#
# | mode | model | task | arms |
# |---|---|---|---|
# | SMALL (tests) | tiny random 2-layer model | synthetic problems | GRPO $n=m=2$ vs PODS $n=4, m=2$, 3 steps — mechanics only |
# | full | SmolLM2-135M-Instruct | synthetic problems | the `small` preset (GRPO $n=m=4$ vs PODS $n=8, m=4$), cut to 2 prompts per step, 6 steps, 16 test questions |
#
# To plot a finished comparison instead of running one here, set `MINIPODS_NB_COMPARE_DIR` to its
# folder (an absolute path), e.g. after `python -m minipods.compare --preset small --output-dir runs/compare`
# in the repository root (the full 32-step preset). Re-running this notebook reuses its own finished arms
# in `runs/nb05` (`minipods.compare` skips arms marked done).

# %%
import os, time, warnings
from pathlib import Path

import minipods  # installed by scripts/setup.sh (pip install -e .)

import numpy as np
import torch
import matplotlib.pyplot as plt

warnings.filterwarnings("ignore", category=FutureWarning)
SMALL = os.environ.get("MINIPODS_NB_SMALL") == "1"  # tiny sizes (the test suite sets this)
T0 = time.perf_counter()
torch.manual_seed(0)
print(f"{'SMALL' if SMALL else 'full'} mode | torch {torch.__version__} | {torch.get_num_threads()} CPU threads")
from IPython.display import Image, Markdown, display
from minipods.analysis import compare, plots, results
import lessons  # this folder's helpers: figures and secondary analyses
from minipods.twins.tiny import tiny_policy

# %%
saved = os.environ.get("MINIPODS_NB_COMPARE_DIR")
if saved:
    out = Path(saved)
    print("loading the saved comparison in $MINIPODS_NB_COMPARE_DIR")
    run_dirs, _, meta = plots.find_runs([out])
    plots.make({0: run_dirs}, out, meta)  # redraw the figures and summary from metrics.jsonl
elif SMALL:
    out = compare.run_comparison(
        "runs/nb05_small", arms=("grpo", "pods_max_variance"), log=print,
        model_factory=lambda cfg: tiny_policy(seed=0),                  # a fresh model per arm
        data="synthetic", n=4, m=2, prompts_per_step=2, max_new_tokens=8, max_prompt_tokens=64,
        max_steps=3, eval_every=1, eval_limit=4, eval_max_new_tokens=8, save_every=3, device="cpu", progress=False)
else:
    out = compare.run_comparison(
        "runs/nb05", arms=("grpo", "pods_max_variance"), preset="small", log=print,
        data="synthetic", prompts_per_step=2, max_steps=6, eval_every=3, eval_limit=16)

# %% [markdown]
# ## 1. The figures
#
# `accuracy_vs_time.png` is the paper's headline plot (test accuracy against *training* seconds,
# evaluation time excluded, 95% Wilson band); `reward_vs_step.png` shows the mean reward of all $n$
# rollouts and of the kept $m$; `time_breakdown.png` splits a step into the two phases. In SMALL mode
# the random tiny model only exercises the machinery: its accuracies and rewards mean nothing.

# %%
display(Markdown((out / "summary.md").read_text()))
for fig_name in ("accuracy_vs_time.png", "reward_vs_step.png", "time_breakdown.png"):
    display(Image(filename=str(out / fig_name)))

# %% [markdown]
# ## 2. Reading the metrics ourselves
#
# Every arm writes one JSON row per step to `metrics.jsonl`: `rollout_s`, `update_s` and `step_s`, the
# kept indices, and what the update was given: `kept_rows` (the $P\,m$ rollouts kept) and `silent_rows`
# (those of them whose advantage is 0). The checks below pin down what the two arms did. A step's update
# time is not one number per arm: the fast update (`minipods/fast/update.py`) leaves out the rows whose
# advantage is 0 (their loss term is 0 whatever the log-probs, so at $\beta = 0$ the gradient is the
# same), and when *every* kept row is silent it runs a single placeholder row so that the optimizer still
# steps: such a step's update costs one row's forward and backward and the optimizer step. The figure
# rings those steps. `update pricing` is what the arm's `config.json` says its `update_s` paid for:
# `skip_silent`, or `every_row` as in the paper's update.

# %%
runs, _, meta = plots.find_runs([out])
rows = {arm: plots.training_rows(plots.read_rows(d)) for arm, d in runs.items()}
cfgs = {arm: plots.read_config(d) for arm, d in runs.items()}
pricing = {arm: results.update_pricing(c).split()[0] for arm, c in cfgs.items()}  # what update_s paid for
GRPO, PODS = "grpo", "pods_max_variance"
for arm, rs in rows.items():
    c = cfgs[arm]
    print(f"{arm:18s} n={c['n']:2d} m={c['m']:2d} | steps {len(rs)} | s/step, median [range]: rollout "
          f"{lessons.seconds_spread([r['rollout_s'] for r in rs])} | update {lessons.seconds_spread([r['update_s'] for r in rs])}"
          f" | silent of kept rows {sum(r['silent_rows'] for r in rs)}/{sum(r['kept_rows'] for r in rs)} | "
          f"update pricing {pricing[arm]} | mean reward {np.mean([r['reward_mean'] for r in rs]):.3f}")
    assert rs and all(len(k) == c["m"] for r in rs for k in r["kept_idx"])  # m kept per prompt
    assert all(r["kept_rows"] == c["m"] * c["prompts_per_step"] >= r["silent_rows"] for r in rs)
assert cfgs[GRPO]["n"] == cfgs[GRPO]["m"] and cfgs[PODS]["n"] > cfgs[PODS]["m"]
assert cfgs[GRPO]["m"] == cfgs[PODS]["m"]   # both keep the same number of rollouts (not always the same live rows)
lessons.plot_phase_times(rows, cfgs)

# %% [markdown]
# The summary table in section 1 gives each arm's **mean** seconds per step; the cell above prints
# **medians**. The mean is what adds up to training time (the sum of the steps), so the cost analysis
# below uses means; the median says what a typical step took. With a few steps whose update times are
# far apart (an all-silent step runs one row, a step with every row live runs all of them), the two can
# order the arms differently; the next cell says whether they do here.

# %%
med_u = {arm: float(np.median([r["update_s"] for r in rs])) for arm, rs in rows.items()}
mean_u = {arm: float(np.mean([r["update_s"] for r in rs])) for arm, rs in rows.items()}
same_order = (mean_u[GRPO] > mean_u[PODS]) == (med_u[GRPO] > med_u[PODS])
print(f"update s/step, mean (summary table) | median (above): GRPO {mean_u[GRPO]:.2f} | {med_u[GRPO]:.2f}, "
      f"PODS {mean_u[PODS]:.2f} | {med_u[PODS]:.2f}")
print("mean and median order the arms' updates the same way" if same_order else
      "mean and median order the arms' updates differently: " + "; ".join(
          f"{arm}'s update steps range over {lessons.seconds_spread([r['update_s'] for r in rs]).strip()} s, "
          f"{sum(r['silent_rows'] == r['kept_rows'] for r in rs)} of {len(rs)} all silent" for arm, rs in rows.items())
      + ": with this few steps, the far-off ones move each arm's mean and not its median")

# %% [markdown]
# ## 3. Accuracy, lenient and strict, with intervals
#
# Each evaluation scores greedy answers on the same held-out questions. **Lenient** accuracy grades
# like the training reward (the number in the last `<answer>` block, else after `####`, else the last
# number); **strict** accuracy counts an answer only inside one well-formed `<answer>` block. A gap
# between them is formatting, not arithmetic. Each accuracy carries its 95% Wilson interval; the two
# arms' final evaluations are compared question by question (`minipods.analysis.stats.paired_difference`:
# Newcombe's paired 95% interval and the exact McNemar p-value), lenient and strict.

# %%
evals = {arm: [r for r in plots.read_rows(d) if r.get("eval_accuracy") is not None] for arm, d in runs.items()}
lessons.print_evaluations(evals)
paired = lessons.paired_finals(runs[GRPO], runs[PODS])  # PODS minus GRPO on the same questions
for what, p in paired.items():
    print(lessons.paired_verdict(p, what), f"| questions only PODS got right {p['b_only']}, only GRPO {p['a_only']}")
for arm, evs in evals.items():
    le, st = lessons.eval_right(evs[-1], "eval_accuracy"), lessons.eval_right(evs[-1], "eval_strict_accuracy")
    if st is not None:
        print(f"{arm}: final evaluation lenient {le[0]}/{le[1]}, strict {st[0]}/{st[1]}: {le[0] - st[0]} of the "
              f"lenient answers count only because grading looks beyond a well-formed <answer> block")
N_Q = evals[GRPO][-1]["eval_n"] if evals[GRPO] else 0
print(f"one question is {100 / max(N_Q, 1):.1f} points of accuracy here")
assert set(paired) >= {"lenient"}  # both arms were evaluated on the same questions
lessons.plot_accuracy_intervals(evals)

# %% [markdown]
# **The paper's own metric** is wall-clock time to GRPO's level: the training seconds each arm needs to
# reach vanilla GRPO's peak test accuracy, and the speed-up GRPO's time / PODS's time. The cell reads it
# two ways. Literally, as the paper defines it: the target is GRPO's best evaluation. With the
# repository's rules (`minipods.analysis.summary`, section 1's summary), which a maximum of noisy
# evaluations would bias: the target is GRPO's plateau, the mean of its last two evaluations, an arm is
# there at its first evaluation within one evaluation's standard error below it, and when GRPO's
# untrained model already meets that target the run cannot say which arm is sooner; the summary also
# re-prices each update as the other pricing would have paid (section 4 shows how). The verdicts are
# stated in words, from these numbers.

# %%
from minipods.analysis.summary import summarize_study

study = results.read_study({0: runs})
all_rows = {0: {arm: plots.read_rows(d) for arm, d in runs.items()}}
s_sum = summarize_study(study, GRPO, PODS, pricing=pricing, repriced=results.repriced_study(study, all_rows, cfgs))
verdict_paper = lessons.paper_metric_verdict(s_sum["time"], GRPO, PODS, f"as run ({pricing[GRPO]})")
rep = s_sum["repriced"]
verdict_repriced = (lessons.paper_metric_verdict(rep["time"], GRPO, PODS, f"re-priced to {rep['to']} (estimate)")
                    if "time" in rep else f"re-priced to {rep['to']}: cannot be computed ({rep['cannot']})")
final_word = lessons.paired_verdict(paired["lenient"], "lenient accuracy")
verdict_peak = lessons.peak_verdict(evals, GRPO, PODS)
display(Markdown(f"**On the paper's metric, this run** (one seed, {N_Q} questions, evaluations after steps "
                 f"{', '.join(str(r['step']) for r in evals[GRPO])}). Read literally: {verdict_peak}. With the "
                 f"repository's rules, {verdict_paper}; {verdict_repriced}. **At the final evaluation**: {final_word}. "
                 "One seed ranks the arms for this run only: the repository's five-seed answer is in section 8."))

# %% [markdown]
# What this comparison **cannot** show: PODS's claim is a better *per-step* signal, visible over many
# steps on a test set large enough to resolve a few points. The cells above print how many points one
# test question is worth here, how wide the paired interval of the final evaluations is, and how far
# below GRPO's plateau still counts as reaching it. A difference inside those is not evidence either
# way. Several seeds and more questions narrow it, counted as they should be: the training run is the
# unit, so an arm difference gets its interval over seeds, not over the seeds' pooled questions
# (section 8 quotes the repository's five-seed study).
#
# ## 4. What each arm's update paid for
#
# Per step, GRPO$(m, m)$ generates $m$ rollouts per prompt and PODS$(n, m)$ $n$; both keep $P\,m$ (with
# $P$ prompts per step). With $G(k)$ the time to generate $k$ rollouts per prompt and $U_\text{GRPO}$,
# $U_\text{PODS}$ the two arms' update times,
#
# $$\frac{T_{\text{PODS}}}{T_{\text{GRPO}}} = \frac{G(n) + U_\text{PODS}}{G(m) + U_\text{GRPO}} .$$
#
# If both updates paid for the same $P\,m$ rows (the paper's update does, and `--no-skip-silent`), then
# $U_\text{PODS} = U_\text{GRPO}$ up to completion lengths and the ratio differs from 1 through
# generation alone. The fast update skips silent rows instead, and the arms' kept rows are not equally
# silent: GRPO keeps its whole group of $m$, silent whenever that group is; max-variance PODS keeps a non-silent subset whenever
# its $n$ rewards are not all equal, so its kept rows are silent only when the whole group of $n$ is. The
# cell prices each arm's update both ways from its own rows: seconds per processed row = the arm's update
# seconds / the rows it processed (a placeholder row counted as one), and a step under the other pricing
# = its seconds scaled by the rows that pricing processes (`minipods.analysis.results.repriced_seconds`,
# which the summary's re-priced time to target uses: the cell checks it gives the same totals). It is
# an estimate: it takes an update's seconds as proportional to its rows.

# %%
costs = {arm: lessons.update_costs(rs, pricing[arm]) for arm, rs in rows.items()}
for arm, c in costs.items():
    print(f"{arm:18s} | kept {c['kept']:.1f} rows/step, silent {c['silent']:.1f}, processed {c['processed']:.1f} as run"
          f" ({c['ran']}); {c['all_silent_steps']}/{c['steps']} steps all silent | {c['per_row']:.3f} s per processed row"
          f" | mean update s/step: silent rows skipped {c['update_skip']:.2f}, every kept row paid {c['update_every']:.2f}")
    other = "every_row" if c["ran"] == "skip_silent" else "skip_silent"
    rep_s = results.repriced_seconds(all_rows[0][arm], c["ran"], other)   # the package's rule, cumulative
    key = "update_every" if other == "every_row" else "update_skip"
    assert abs(rep_s[max(rep_s)] - rows[arm][-1]["elapsed_s"] - c["steps"] * (c[key] - c["update"])) < 1e-6
    assert c["update_skip"] <= c["update_every"] + 1e-9 and c["processed"] <= c["kept"]
g, p = costs[GRPO], costs[PODS]
R_run, R_every, R_skip = p["step"] / g["step"], p["step_every"] / g["step_every"], p["step_skip"] / g["step_skip"]
step_ratios = [pr["step_s"] / gr["step_s"] for gr, pr in zip(rows[GRPO], rows[PODS])]  # same step, same questions
print(f"PODS/GRPO mean step time: as run {R_run:.2f} (step by step {min(step_ratios):.2f}-{max(step_ratios):.2f}); "
      f"both skipping silent rows {R_skip:.2f}; both paying every kept row {R_every:.2f} (estimate)")
print(f"the update's share of a GRPO step: as run {g['update'] / g['step']:.2f}, every kept row paid "
      f"{g['update_every'] / g['step_every']:.2f}; GRPO's update is {g['update'] / g['update_every']:.0%} of its "
      f"every-row price, PODS's {p['update'] / p['update_every']:.0%}")

# %% [markdown]
# ## 5. A cost model measured here
#
# Two runs give one point per phase; a cost model needs the *lines*. `minipods.measure.costmodel` times, on this
# machine, one batched `generate` of $k$ sequences for several $k$ and one GRPO update on $k$ kept
# sequences for several $k$ (the same helpers as `python -m minipods.bench --parts costmodel`), fits
#
# $$\text{rollout}(k) = a_r + b_r k, \qquad \text{update}(k) = a_u + b_u k,$$
#
# and prices a step with $P$ prompts: GRPO $(m, m)$ costs $\text{rollout}(Pm) + \text{update}(Pm)$, GRPO on
# all $n$ costs $\text{rollout}(Pn) + \text{update}(Pn)$, PODS $(n \to m)$ costs
# $\text{rollout}(Pn) + \text{update}(Pm)$. Its update points give every row a non-zero advantage, so
# the model prices **every kept row** for both arms: the paper's update, not the arms' (section 4).
# One timing on a shared CPU can be far off, so the whole measurement runs `CM_REPEATS` times: the lines
# are fitted to each point's fastest timing (the least disturbed), and every repeat's own fit is kept to
# show how far the conclusions below move with the noise.

# %%
from minipods.measure import costmodel
from minipods.measure.config import BenchConfig, Context
from minipods.data import build_prompt, synthetic_problems

if SMALL:  # the tiny random model: the mechanics only, in a few seconds
    cm_model, cm_tok = tiny_policy(seed=0)
    cm_cfg = BenchConfig(n=8, max_new_tokens=8, m_values=[2, 4, 8], micro_batch_size=4)
else:  # the settings of the comparison above (the --small preset): SmolLM2, LoRA r=16, 64 new tokens
    from minipods.model import load_policy
    cm_model, cm_tok = load_policy(dtype=cfgs[GRPO]["dtype"], lora_r=16, lora_alpha=32)
    cm_cfg = BenchConfig(n=16, max_new_tokens=cfgs[GRPO]["max_new_tokens"], m_values=[2, 4, 8], micro_batch_size=4)
ctx = Context(model=cm_model, tok=cm_tok, device="cpu",
              prompt=build_prompt(cm_tok, synthetic_problems(1, seed=0)[0]["question"]))
CM_REPEATS = 3
t4 = time.perf_counter()
cm_runs = [costmodel.part_costmodel(ctx, cm_cfg) for _ in range(CM_REPEATS)]
print(f"measured {CM_REPEATS} times in {time.perf_counter() - t4:.0f} s")

# %%
roll_t, upd_t = lessons.costmodel_timings(cm_runs, "rollout_points"), lessons.costmodel_timings(cm_runs, "update_points")
for label, pts in (("rollout, one generate of", roll_t), ("update on the kept", upd_t)):
    for k_, ts in pts.items():
        print(f"  {label:25s} {k_:2d} sequences: fastest {min(ts):7.3f} s, median {np.median(ts):7.3f} s, slowest {max(ts):7.3f} s")
cm = costmodel.CostModel(costmodel.fit_line(list(roll_t), [min(v) for v in roll_t.values()]),
                         costmodel.fit_line(list(upd_t), [min(v) for v in upd_t.values()]))
cm_each = [costmodel.CostModel(costmodel.Line(**r_["rollout_fit"]), costmodel.Line(**r_["update_fit"])) for r_ in cm_runs]
print(f"  fit to the fastest: rollout(k) = {cm.rollout.a:.3f} + {cm.rollout.b:.4f} k s (R² {cm.rollout.r2:.3f}); "
      f"update(k) = {cm.update.a:.3f} + {cm.update.b:.4f} k s (R² {cm.update.r2:.3f})")
cm_len = np.mean([pt["tokens"] / pt["sequences"] for r_ in cm_runs for pt in r_["rollout_points"]])
print(f"  mean completion length: the model's rollouts {cm_len:.0f} tokens, the arms' GRPO {g['completion_len']:.0f}, "
      f"PODS {p['completion_len']:.0f} (a row's update time grows with its tokens)")

# %% [markdown]
# **The model against the arms.** The model prices the comparison's step (its $P$, $n$, $m$) with every
# kept row paying, at this moment's timings; the arms ran minutes earlier, skipping silent rows. The cell
# puts the three side by side, the model, the arms priced as the model prices them (section 4's
# every-row estimate) and the arms as run, and splits the gap between the model's PODS/GRPO ratio and
# the arms' into those two steps.

# %%
P5, n5, m5 = cfgs[GRPO]["prompts_per_step"], cfgs[PODS]["n"], cfgs[PODS]["m"]
n_over_m = n5 / m5
pred = cm.step_seconds(n5, m5, prompts=P5)
R_model, pp = pred["pods"] / pred["grpo"], pred["parts"]
print(f"seconds per step (P={P5}, n={n5}, m={m5})     model (GRPO/PODS) | GRPO arm | PODS arm")
print(f"  rollout (P m | P n)                 {pp['rollout_m']:8.2f}/{pp['rollout_n']:.2f} | {g['rollout']:8.2f} | {p['rollout']:8.2f}")
print(f"  update, every kept row paid         {pp['update_m']:13.2f} | {g['update_every']:8.2f} | {p['update_every']:8.2f}")
print(f"  update as run ({g['ran']:11s})       {'-':>13s} | {g['update']:8.2f} | {p['update']:8.2f}")
print(f"break-even gain T_PODS/T_GRPO at n/m = {n_over_m:g}: model {R_model:.2f}; the arms, every kept row paid "
      f"{R_every:.2f}; the arms as run {R_run:.2f}; generation alone G(n)/G(m): arms {p['rollout'] / g['rollout']:.2f}")
print(f"the gap {R_run - R_model:+.2f} = the same every-row work timed in the arms instead of the model {R_every - R_model:+.2f}"
      f" + the arms' silent-row pricing {R_run - R_every:+.2f}")
share = {"model": pp["update_m"] / pred["grpo"], "every": g["update_every"] / g["step_every"], "run": g["update"] / g["step"]}
print(f"the update's share of a GRPO step: model {share['model']:.2f}, the arms every row paid {share['every']:.2f}, "
      f"the arms as run {share['run']:.2f}")
assert abs(R_model - costmodel.break_even(pred["pods"], pred["grpo"])["break_even_gain"]) < 1e-12

# %% [markdown]
# Read the two steps of the gap from the printout: the first is the same work (every kept row) timed
# twice, in the arms and in the model's own timings, which differ in completion lengths (printed above),
# in prompts per generate and in what else the machine was running; the second is the silent-row
# discount, which shrinks each arm's update by its silent kept rows (section 4 printed how many each
# arm had). Shrinking both updates moves the ratio toward generation's own ratio $G(n)/G(m)$ (printed
# above); more silent kept rows in GRPO than in PODS move it up beyond that, more in PODS down. The
# model answers the paper's question (every kept row paid); the arms answer this run's.
#
# ## 6. The break-even gain, here and on the paper's L40S
#
# If one PODS step is worth `gain` GRPO steps (GRPO's steps to a target / PODS's steps to it), PODS
# reaches the target sooner in wall-clock time **iff**
#
# $$\text{gain} \;>\; \frac{T_\text{PODS}}{T_\text{GRPO}} \quad(\text{the break-even gain}),$$
#
# and its wall-clock speed-up is $\text{gain}\cdot T_\text{GRPO}/T_\text{PODS}$.
#
# **The paper's machine.** The paper's single-GPU L40S run (Sec. 5) takes 7.5 s per GRPO step
# ($n = m = 16$) and 10.1 s per PODS step ($n = 64 \to m = 16$); `costmodel.paper_l40s()` holds these
# two numbers. Their difference is what 48 more rollouts per prompt cost: with rollout time linear in
# the number of rollouts, $b_r = (10.1 - 7.5)/48$ s per extra rollout per prompt, and for any $n$ at
# $m = 16$
#
# $$\frac{T_\text{PODS}(n)}{T_\text{GRPO}} = 1 + \Big(\frac nm - 1\Big)\,\frac{10.1 - 7.5}{7.5\,(64/16 - 1)},$$
#
# a straight line through $(1, 1)$ and the paper's point $(4, 10.1/7.5)$. The split of the 7.5 s
# between generation and update is not in the two numbers, and the curve does not need it: a fixed
# generation cost $a_r$ moves time from the update to generation but cancels in $T_\text{PODS} -
# T_\text{GRPO}$ (the cell checks this). What the numbers do bound is the update's share: with
# $a_r \ge 0$, generating 16 rollouts per prompt takes at least $16\,b_r$, so the update takes at most
# $1 - 16\,b_r/7.5$ of a GRPO step (equality when generation has no fixed cost). The paper's update pays
# for every kept row, as this cost model does. The paper reports a ~2× speed-up at $n/m = 4$, which
# implies each PODS step was worth $2 \times 10.1/7.5$ GRPO steps.
#
# **This machine.** The fitted lines give the same curve at the comparison's $P$ and $m$. With linear
# phases both curves are straight lines through $(1, 1)$: their slopes — the extra cost of each further
# multiple of $m$, as a share of a GRPO step — are the whole comparison. The figure adds the arms: as
# run (black diamond) and priced every row (hollow), section 5's gap drawn.

# %%
paper = costmodel.paper_l40s()
T_g, T_p, n_p, m_p = paper["grpo_s"], paper["pods_s"], paper["n"], paper["m"]
b_r_paper = (T_p - T_g) / (n_p - m_p)                       # s per extra rollout per prompt (P folded in)
paper_update_share_max = 1 - m_p * b_r_paper / T_g


def paper_model(a_r):
    """A cost model with the paper's two step times (per prompt, P = 1) and a fixed generation cost a_r."""
    rollout = costmodel.Line(a_r, b_r_paper)
    return costmodel.CostModel(rollout, costmodel.Line(0.0, (T_g - rollout(m_p)) / m_p))


ratios = np.arange(1, 9)
paper_curve = [paper_model(0.0).break_even(int(r * m_p), m_p)["break_even_gain"] for r in ratios]
assert np.allclose(paper_curve, [paper_model(1.0).break_even(int(r * m_p), m_p)["break_even_gain"] for r in ratios])
assert abs(paper_curve[3] - T_p / T_g) < 1e-9 and abs(paper["break_even_gain"] - T_p / T_g) < 1e-9
here_curve = lessons.break_even_curve(cm, ratios, m5, P5)
here_curves = [c for c in (lessons.break_even_curve(c_, ratios, m5, P5) for c_ in cm_each) if c] or [here_curve]
paper_gain = costmodel.implied_gain(2.0, T_p, T_g)
here_4 = cm.break_even(4 * m5, m5, prompts=P5, gain=paper_gain)

# %%
be4_all = [here_curve[3]] + [c_[3] for c_ in here_curves]   # at n/m = 4: the fit to the fastest, and each repeat's
slope_here, slope_paper = here_curve[1] - here_curve[0], paper_curve[1] - paper_curve[0]
print(f"paper L40S: break-even gain {paper['break_even_gain']:.3f} at n/m = {n_p // m_p}; slope {slope_paper:.3f} per unit "
      f"of n/m; update share of a GRPO step <= {paper_update_share_max:.2f}; its ~2x speed-up implies a gain of {paper_gain:.2f}")
print(f"here, the model (P={P5}, m={m5}, every kept row paid): break-even gain {R_model:.3f} at the comparison's n/m = "
      f"{n_over_m:g}, {here_4['break_even_gain']:.3f} at n/m = 4 ({min(be4_all):.3f} to {max(be4_all):.3f} over the "
      f"{len(here_curves)} usable repeats' fits of {CM_REPEATS}); slope {slope_here:.3f} per unit of n/m; update share {share['model']:.2f}")
cheaper = ("neither clearly cheaper nor dearer" if min(be4_all) <= paper["break_even_gain"] <= max(be4_all)
           else "cheaper" if slope_here < slope_paper else "dearer")
cost_short = f"priced as the paper's update, extra rollouts are {cheaper} here than on the paper's L40S, as a share of a step"
verdict_cost = (f"{cost_short} (slope {slope_here:.3f} vs {slope_paper:.3f}; at n/m = 4 PODS must be worth "
                f"{here_4['break_even_gain']:.2f} GRPO steps here, {min(be4_all):.2f}-{max(be4_all):.2f} over the repeated "
                f"timings, vs {paper['break_even_gain']:.2f} there)")
verdict_pays = lessons.pays_sentence(here_4, paper_gain, max(roll_t), m5)
print(verdict_cost); print(verdict_pays)
print(f"the arms sit {'above' if R_run > R_model else 'below'} the model's curve at n/m = {n_over_m:g} "
      f"({R_run:.2f} vs {R_model:.2f}); priced every row they sit at {R_every:.2f}: section 5 splits the difference")
lessons.plot_break_even(roll_t, upd_t, cm, ratios, here_curve, here_curves, paper_curve, paper, paper_gain,
                        n_over_m, R_run, R_every, step_ratios, f"P={P5}, m={m5}")

# %% [markdown]
# ## 7. Why the silent-group fractions came out as they did
#
# A group is *silent* when all its rewards are equal (zero std): it gives GRPO no signal. With binary
# rewards and pass rate $p$, a group of $n$ is silent with probability $p^n + (1-p)^n$
# (`minipods.analysis.gradients.predicted_silent_fraction`; notebooks 02 and 03), which falls as $n$
# grows — so at equal pass rates PODS's groups of $n$ should be silent *less* often than GRPO's groups of
# $m$ (and max-variance keeps a non-silent subset whenever the $n$ are not all equal). Whether a run shows
# that depends on three things the cell below measures per arm from `metrics.jsonl`:
#
# 1. **How many groups there are**: steps × prompts per step. One group more or less moves the fraction
#    by 1/(that number); the Wilson interval says how far chance alone could move it.
# 2. **The pass rates**: after the first update the arms are different models with different pass
#    rates. The prediction uses each step's fraction of correct rollouts as the pass rate of all its
#    prompts. Prompts really differ (some are hopeless, $p = 0$, silent at any $n$), and since
#    $p^n + (1-p)^n$ is convex in $p$, mixing pass rates only *raises* the silent fraction: the
#    prediction is a lower bound for binary rewards.
# 3. **The format term**: the reward is correctness plus a graded format bonus, so rollouts that are
#    all wrong but differ in format are not silent; when the format bonus fires the observed fraction
#    can fall below the binary prediction.
#
# A silent group also sets what section 4 measured: its kept rows are the update's silent rows.

# %%
silent = {arm: lessons.silent_groups(rs, cfgs[arm]) for arm, rs in rows.items()}
for arm, sa in silent.items():
    lo, hi = sa["ci"]
    print(f"{arm:18s} n={sa['n']}: silent groups {sa['k']}/{sa['total']} = {sa['frac']:.2f} [95% CI {lo:.2f}, {hi:.2f}] | "
          f"mean pass rate {sa['p']:.3f} | predicted p^n+(1-p)^n (common p per step) {sa['pred']:.2f} | "
          f"steps where the format bonus fired {sa['fmt_steps']}/{len(rows[arm])}")
print("step by step (silent groups of P; pass rate):")
for g_row, p_row in zip(rows[GRPO], rows[PODS]):
    print(f"  step {g_row['step']}: GRPO {round(g_row['zero_std_frac'] * P5)}/{P5} (p {g_row['correct_frac']:.2f}) | "
          f"PODS {round(p_row['zero_std_frac'] * P5)}/{P5} (p {p_row['correct_frac']:.2f})")
verdict_silent = lessons.silent_verdict(silent[GRPO], silent[PODS])
print(verdict_silent)

# %% [markdown]
# ## 8. What the repository measured: the five-seed study
#
# One seed ranks two arms for one run. The repository's measured answer is the five-seed study of
# `python -m minipods.compare --preset small --seeds 0,1,2,3,4` (docs/results.md: 32 steps, 4 prompts
# per step, $n/m = 8/4 = 2$, 128 test questions, silent rows skipped in the update), re-read with the
# training run as the unit ("Re-read with the run as the unit", `python scripts/seed_level_tables.py`:
# the mean of the per-seed differences with its Student-t 95% interval over seeds and the exact
# sign-flip p):
#
# | five runs | result [95% CI over seeds] |
# |---|---|
# | final accuracy, max-variance PODS minus `grpo` | +1.4 points [−16.0, +18.8], p 0.94 |
# | final accuracy, max-variance PODS minus random PODS | +12.7 points [−8.2, +33.5], p 0.25 |
# | wall-clock speed-up to `grpo`'s old target (3 seeds where both reached it) | 0.98x [0.62, 1.53] |
#
# So at this scale neither PODS nor GRPO is shown ahead, max-variance is not shown better than random
# selection, and the paper's 1.7-2x is not reproduced (docs/results.md gives the reasons it found,
# among them the same silent-row discount section 4 measures here). That study is not the paper's own
# design (one prompt per step, $n/m = 4$, an update that pays every kept row, equal training time): its
# laptop-scale version, `--preset laptop`, has run its ten-seed study (`studies/laptop10`, in the repository;
# docs/results.md, "What the ten seeds say"). The cell below reads its run folders with the same
# seed-level summary `compare` prints: the paper's metric (time to GRPO's level, per seed, censored seeds at
# their bound), steps beside seconds, the final accuracies, and what ten seeds can resolve.

# %%
import json
from minipods.analysis.summary import format_difference, resolve_lines, summarize_study

LAPTOP = Path(minipods.__file__).resolve().parent.parent / "studies" / "laptop10"
lap = None
if (LAPTOP / "comparison.json").is_file():  # an installed package without the repository's studies/ skips this
    meta = json.loads((LAPTOP / "comparison.json").read_text())
    lap = summarize_study(results.read_study(results.seed_dirs(LAPTOP, meta)), meta.get("baseline", "grpo"), "pods_max_variance")
    lt = lap["time"]["arms"]
    sp = lt["pods_max_variance"]["speedup"]
    lap_line = (f"{len(lap['seeds'])} seeds: PODS reached GRPO's level {'≤' if lt['pods_max_variance']['censored'] else ''}"
                f"{sp['ratio']:.2f}x as fast [{sp['lo']:.2f}, {sp['hi']:.2f}] (GRPO {lt['grpo']['restricted_step']['mean']:.1f} steps, "
                f"PODS ≥ {lt['pods_max_variance']['restricted_step']['mean']:.1f}); final PODS minus GRPO "
                f"{format_difference(lap['versus']['grpo'], per_seed=False)}; max-variance minus random "
                f"{format_difference(lap['versus']['pods_random'], per_seed=False)}")
    print("the laptop study on the paper's design,", lap_line)
    print("\n".join(resolve_lines(lap)))  # the lines compare's summary.md ends with
    assert sp["lo"] < 1.7  # the paper's 1.7-2x is not inside what this study measured
else:
    print(f"{LAPTOP} is not here: the laptop study's numbers are in docs/results.md")

# %% [markdown]
# ## 9. Takeaways
#
# PODS trades cheap, parallel inference for dearer training: generate many rollouts, train on the few
# with the largest reward spread. Its extra cost per step is the extra generation *minus* any difference
# in what the two updates pay for: an update that skips silent rows makes vanilla GRPO's update cheaper
# exactly when its groups carry no signal, which the paper's update does not. Its gain, more signal per
# update, shows only over many steps, many test questions and several seeds. The harness, figures and
# summary are the same everywhere: `python -m minipods.compare --small` here, `--preset paper` on a GPU.
# The card below is assembled from this run's numbers.

# %%
card = f"""**On a card** (from this run, {'SMALL' if SMALL else 'full'} mode).

* PODS step = rollout(P n) + update(P m kept); GRPO step = rollout(P m) + update(P m kept); an update that skips \
silent rows pays only for the live ones: here GRPO's update cost {g['update'] / g['update_every']:.0%} of its every-row price, PODS's {p['update'] / p['update_every']:.0%}.
* PODS pays iff one PODS step is worth more than T_PODS / T_GRPO GRPO steps. At this run's n/m = {n_over_m:g}: the arms \
as run {R_run:.2f}, every kept row paid {R_every:.2f}, the cost model {R_model:.2f} (update share of a GRPO step: arms {share['run']:.2f}, model {share['model']:.2f}).
* At n/m = 4, priced as the paper's update: here {here_4['break_even_gain']:.2f}; the paper's L40S {paper['break_even_gain']:.2f} = {T_p}/{T_g} s; \
{cost_short}.
* {verdict_pays[0].upper() + verdict_pays[1:]}.
* The paper's metric, this run: read literally, {verdict_peak}; with the repository's rules, {verdict_paper}.
* This run's final evaluation: {lessons.paired_verdict(paired['lenient'], 'lenient accuracy')}\
{'; ' + lessons.paired_verdict(paired['strict'], 'strict') if 'strict' in paired else ''}.
* Silent groups: {verdict_silent}
* The five-seed study (docs/results.md, the run as the unit): PODS minus GRPO +1.4 points [−16.0, +18.8] over five runs, \
speed-up 0.98x [0.62, 1.53] on the 3 seeds where both reached the old target: no winner shown.
{'* The laptop study on the paper' + chr(39) + 's design, ' + lap_line + ': the paper' + chr(39) + 's 1.7-2x not reproduced, no winner resolved.' + chr(10) if lap else ''}* Measure both lines, and what your update pays for, on your own machine before choosing n."""
display(Markdown(card))

# %%
print(f"notebook ran in {time.perf_counter() - T0:.0f} s ({'SMALL' if SMALL else 'full'} mode)")
