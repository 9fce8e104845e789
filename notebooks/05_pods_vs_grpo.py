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
# > * **You will learn:** (1) a PODS-vs-GRPO comparison with `compare`, read from its `metrics.jsonl`; (2) what a step costs here and on the paper's L40S, and the break-even gain; (3) how to read a study with the run as the unit: seed-level intervals, time to target, time-averaged accuracy.
# > * **Comes first:** 01–04.
# > * **Time here** (AMD EPYC family 25 model 1 (Zen 3), 2 cores, idle; `scripts/run_notebooks.py`, 2026-12-04): full mode 5 min 1 s, of it the comparison's training 3 min 16 s and section 5's cost model 1 min 40 s; small mode (as tests/test_notebooks.py runs it, one thread) 18 s. A rerun reuses the finished arms (the last cell says so).
# > * **You should see:** in section 8, the ten-seed study's time to GRPO's level with its interval, and a PODS step's worth beside its cost.
#
# **Question.** What does one PODS step cost against one GRPO step on this machine and on the paper's
# GPU, how much better must a PODS step be for PODS to win on wall-clock time, and what can a small
# comparison here show about it?
#
# The paper's headline (Xu, Savani, Fang, Kolter, *Not All Rollouts are Useful: Down-Sampling Rollouts in LLM Reinforcement Learning*, TMLR 2026, Fig. 1, Sec. 5): on one L40S GPU with Qwen2.5-3B-Instruct on
# GSM8K, GRPO-PODS generating $n = 64$ rollouts and updating on the $m = 16$ of maximal reward variance
# "achieves the peak test accuracy of vanilla GRPO" ($n = m = 16$) **at least 1.7× faster** in
# wall-clock time, about 2× in its Figure 1.
#
# Here we run the same comparison in miniature with `minipods.analysis.compare` (each arm is a
# `minipods.train` run with the same seed and data order) and draw it with `minipods.analysis.plots`.
# Then we read what it measured: accuracy (lenient and strict) with intervals and the paper's own metric
# (time to GRPO's level), what each arm's update paid for (the fast update leaves out rollouts whose
# advantage is 0, so the two arms do not pay for the same rows), a cost model fitted on this machine and
# the gap between it and the arms, the break-even gain here and on the paper's L40S, and why the arms'
# fractions of silent (zero-std) groups came out as they did. Section 8 then reads the repository's
# ten-seed study on the paper's design (`studies/laptop10`): one seed here ranks nothing, ten seeds
# there say what this scale can and cannot resolve. Every number below is printed by a cell from the
# runs' own files; where the text reads a number, an assert in the cell keeps that reading true.
#
# | mode | model | task | arms |
# |---|---|---|---|
# | SMALL (tests) | tiny random 2-layer model | synthetic problems | GRPO $n=m=2$ vs PODS $n=4, m=2$, 3 steps — mechanics only |
# | full | SmolLM2-135M-Instruct | synthetic problems | the `small` preset (GRPO $n=m=4$ vs PODS $n=8, m=4$), cut to 2 prompts per step, 6 steps, 16 test questions |
#
# To plot a finished comparison instead of running one here, set `MINIPODS_NB_COMPARE_DIR` to its
# folder (an absolute path), e.g. after `python -m minipods.compare --preset small --output-dir runs/compare`
# in the repository root (the full 32-step preset). Re-running this notebook reuses its own finished arms
# in `runs/nb05` (`minipods.compare` skips arms marked done; the last cell says so).
#
# **Set-up.** The first cell imports minipods (installed with `pip install -e .` in the repository:
# scripts/setup.sh does it) and this folder's helpers, `lessons.py` (figures and timing tools; Jupyter
# starts the kernel in the notebook's own folder). On Colab or another fresh runtime, first run
# docs/gpu.md's install cell ("On a Colab T4": clone into `/content/minipods`,
# `pip install -r requirements-colab.txt`, `pip install --no-deps -e .`) and restart the runtime once;
# the first cell then works in the clone's `notebooks/` folder. Without minipods it stops with one line
# saying how to install it.
# Everything here runs on the CPU, on a GPU runtime too (`DEVICE = "cpu"`): what this notebook
# measures is a CPU.

# %%
import os, sys, time, warnings
from pathlib import Path

if "google.colab" in sys.modules and Path("/content/minipods/notebooks").is_dir():
    os.chdir("/content/minipods/notebooks")  # Colab, after docs/gpu.md's install cell: work in the clone's notebooks/
try:
    import minipods
    import lessons  # this folder's figures and timing tools
except ImportError as e:
    raise SystemExit(f"{e.name} not found: run `pip install -e .` in the minipods repository and open this notebook "
                     "from its notebooks/ folder (on Colab: docs/gpu.md's install cell, then restart)") from None
import numpy as np
import torch
from IPython.display import Image, Markdown, display

from minipods.analysis import compare, plots, results
from minipods.twins.tiny import tiny_policy

DEVICE = "cpu"  # this notebook times a CPU: on a GPU runtime too, its models stay on the CPU
SMALL = os.environ.get("MINIPODS_NB_SMALL") == "1"  # tiny sizes (the test suite sets this)
warnings.filterwarnings("ignore", category=FutureWarning)
T0 = time.perf_counter()
torch.manual_seed(0)
print(f"{'SMALL' if SMALL else 'full'} mode | torch {torch.__version__} | {torch.get_num_threads()} CPU threads | "
      f"models on {DEVICE}" + (" (a GPU is present and left alone)" if torch.cuda.is_available() else ""))

# %%
saved = os.environ.get("MINIPODS_NB_COMPARE_DIR")
folder = Path(saved) if saved else Path("runs/nb05_small" if SMALL else "runs/nb05")
reused = {arm: (folder / arm / "DONE").is_file() for arm in ("grpo", "pods_max_variance")}  # finished before this run
t_compare = time.perf_counter()
if saved:
    out = folder
    print("loading the saved comparison in $MINIPODS_NB_COMPARE_DIR")
    run_dirs, _, meta = plots.find_runs([out])
    plots.make({0: run_dirs}, out, meta)  # redraw the figures and summary from metrics.jsonl
elif SMALL:
    out = compare.run_comparison(
        folder, arms=("grpo", "pods_max_variance"), log=print,
        model_factory=lambda cfg: tiny_policy(seed=0),                  # a fresh model per arm
        data="synthetic", n=4, m=2, prompts_per_step=2, max_new_tokens=8, max_prompt_tokens=64,
        max_steps=3, eval_every=1, eval_limit=4, eval_max_new_tokens=8, save_every=3, device=DEVICE, progress=False)
else:
    out = compare.run_comparison(
        folder, arms=("grpo", "pods_max_variance"), preset="small", log=print, device=DEVICE,
        data="synthetic", prompts_per_step=2, max_steps=6, eval_every=3, eval_limit=16)
T_COMPARE = time.perf_counter() - t_compare  # training and evaluations, unless the arms were reused

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
rows = {arm: results.training_rows(results.read_rows(d)) for arm, d in runs.items()}
cfgs = {arm: results.read_config(d) for arm, d in runs.items()}
pricing = {arm: c["update_pricing"] for arm, c in cfgs.items()}  # what update_s paid for: skip_silent or every_row
GRPO, PODS = "grpo", "pods_max_variance"


def spread(xs):
    return f"{np.median(xs):6.2f} [{min(xs):.2f}-{max(xs):.2f}]"  # median [min-max]


for arm, rs in rows.items():
    c = cfgs[arm]
    print(f"{arm:18s} n={c['n']:2d} m={c['m']:2d} | steps {len(rs)} | s/step, median [range]: rollout "
          f"{spread([r['rollout_s'] for r in rs])} | update {spread([r['update_s'] for r in rs])}"
          f" | silent of kept rows {sum(r['silent_rows'] for r in rs)}/{sum(r['kept_rows'] for r in rs)} | "
          f"update pricing {pricing[arm]} | mean reward {np.mean([r['reward_mean'] for r in rs]):.3f}")
    assert rs and all(len(k) == c["m"] for r in rs for k in r["kept_idx"])  # m kept per prompt
    assert all(r["kept_rows"] == c["m"] * c["prompts_per_step"] >= r["silent_rows"] for r in rs)
assert cfgs[GRPO]["n"] == cfgs[GRPO]["m"] and cfgs[PODS]["n"] > cfgs[PODS]["m"]
assert cfgs[GRPO]["m"] == cfgs[PODS]["m"]   # both keep the same number of rollouts (not always the same live rows)
lessons.plot_phase_times(rows)

# %% [markdown]
# The summary table in section 1 gives each arm's **mean** seconds per step; the cell above prints
# **medians**. The mean is what adds up to training time (the sum of the steps), so the cost analysis
# below uses means; the median says what a typical step took. With a few steps whose update times are
# far apart (an all-silent step runs one row, a step with every row live runs all of them), the two can
# order the arms differently: the cell prints both, and how many steps of each arm were all silent.

# %%
med_u = {arm: float(np.median([r["update_s"] for r in rs])) for arm, rs in rows.items()}
mean_u = {arm: float(np.mean([r["update_s"] for r in rs])) for arm, rs in rows.items()}
for arm, rs in rows.items():
    print(f"{arm:18s} update s/step: mean {mean_u[arm]:.2f} (summary table) | median {med_u[arm]:.2f} (above) | "
          f"{sum(r['silent_rows'] == r['kept_rows'] for r in rs)} of {len(rs)} steps all silent")
print(f"GRPO's update dearer than PODS's by the mean: {mean_u[GRPO] > mean_u[PODS]}; by the median: {med_u[GRPO] > med_u[PODS]}")

# %% [markdown]
# ## 3. Accuracy, lenient and strict, with intervals
#
# Each evaluation scores greedy answers on the same held-out questions. **Lenient** accuracy grades
# like the training reward (the number in the last `<answer>` block, else after `####`, else the last
# number); **strict** accuracy counts an answer only inside one well-formed `<answer>` block. A gap
# between them is formatting, not arithmetic. Each accuracy carries its 95% Wilson interval; the two
# arms' final evaluations are compared question by question (`minipods.stats.paired_difference`:
# Newcombe's paired 95% interval for PODS minus GRPO and the exact McNemar p-value), lenient and strict.

# %%
from minipods.stats import paired_difference, wilson_interval


def right(r, key):
    """(right, questions) of an evaluation row; None when the run did not record `key`."""
    return None if r.get(key) is None else (round(r[key] * r["eval_n"]), r["eval_n"])


def with_ci(c):
    return "      -       " if c is None else f"{c[0]:2d}/{c[1]} [{wilson_interval(*c)[0]:.2f}, {wilson_interval(*c)[1]:.2f}]"


evals = {arm: [r for r in results.read_rows(d) if r.get("eval_accuracy") is not None] for arm, d in runs.items()}
for arm, evs in evals.items():
    for r in evs:
        le, st = right(r, "eval_accuracy"), right(r, "eval_strict_accuracy")
        print(f"{arm:18s} step {r['step']:2d} at {r['elapsed_s']:6.1f} s | lenient {with_ci(le)} | strict {with_ci(st)}"
              f" | format rate {r.get('eval_format_rate', float('nan')):.2f}")
        assert st is None or st[0] <= le[0]  # a strict answer is also a lenient one
paired = {}  # PODS minus GRPO on the questions both final evaluations scored
for key, what in (("correct", "lenient"), ("strict", "strict")):
    a, b = ({q["index"]: int(q[key]) for q in results.final_eval(runs[arm]) if key in q} for arm in (GRPO, PODS))
    common = sorted(set(a) & set(b))
    if common:
        paired[what] = paired_difference([a[i] for i in common], [b[i] for i in common])
for what, p in paired.items():
    print(f"final evaluation, {what}: PODS minus GRPO {100 * p['diff']:+.1f} points [{100 * p['ci95'][0]:+.1f}, "
          f"{100 * p['ci95'][1]:+.1f}], McNemar p {p['p']:.2f}, {p['n']} questions | only PODS right {p['b_only']}, "
          f"only GRPO {p['a_only']}")
N_Q = evals[GRPO][-1]["eval_n"]
print(f"one question is {100 / N_Q:.1f} points of accuracy here")
assert set(paired) >= {"lenient"}  # both arms were evaluated on the same questions
lessons.plot_accuracy_intervals(evals)

# %% [markdown]
# How to read the last line: with this few questions one question moves the accuracy by several points,
# and the paired interval of the final evaluations is a few tens of points wide. In a full run it
# includes 0 (asserted below): at its last evaluation this run shows no difference between the arms.
# What the interval is about: these questions, for this one training run each, not the arms in general.
#
# **The paper's own metric** is wall-clock time to GRPO's level: the training seconds each arm needs to
# reach vanilla GRPO's peak test accuracy, and the speed-up GRPO's time / PODS's time. The cell reads it
# two ways. Literally, as the paper defines it: the target is GRPO's best evaluation. With the
# repository's rules (`minipods.analysis.summary.time_to_target`, section 1's summary), which a maximum of
# noisy evaluations would bias: the target is GRPO's plateau, the mean of its last two evaluations; an arm
# is there at its first evaluation within one evaluation's standard error $\sqrt{t(1-t)/N}$ below it;
# and when GRPO's untrained model (step 0) already meets that target there is no target, and the run
# cannot say which arm is sooner. The summary also re-prices each update as the other pricing would
# have paid (section 4 shows how).

# %%
from minipods.analysis.summary import summarize_study

lo_f, hi_f = paired["lenient"]["ci95"]
if not SMALL:  # the reading above, on the full run's 16 questions
    assert lo_f <= 0 <= hi_f, "the text says the final evaluations show no difference"
peak = max(r["eval_accuracy"] for r in evals[GRPO])
hit = {a: next((r for r in evals[a] if r["eval_accuracy"] >= peak - 1e-12), None) for a in (GRPO, PODS)}
print(f"literally: GRPO's peak {round(peak * N_Q)}/{N_Q}, first reached at step {hit[GRPO]['step']} "
      f"({hit[GRPO]['elapsed_s']:.1f} s); PODS " + (f"at step {hit[PODS]['step']} ({hit[PODS]['elapsed_s']:.1f} s)"
      if hit[PODS] else f"never (its best {round(max(r['eval_accuracy'] for r in evals[PODS]) * N_Q)}/{N_Q})")
      + (" -- GRPO's peak is its untrained model's: no target" if hit[GRPO]["step"] == 0 else ""))
study = results.read_study({0: runs})
all_rows = {0: {arm: results.read_rows(d) for arm, d in runs.items()}}
s_sum = summarize_study(study, GRPO, PODS, pricing=pricing, repriced=results.repriced_study(study, all_rows, cfgs))
rep = s_sum["repriced"]
for label, t in ((f"as run ({pricing[GRPO]})", s_sum["time"]), (f"re-priced to {rep['to']} (estimate)", rep.get("time"))):
    tt = t and t["targets"][0]
    if not tt:
        print(f"{label}: " + (f"cannot be re-priced ({rep['cannot']})" if t is None else
                              "no target: GRPO's step-0 evaluation already meets GRPO's plateau"))
        continue
    g, q = (t["arms"][a]["per_seed"][0] for a in (GRPO, PODS))
    print(f"{label}: target {100 * tt[0]:.1f}% (tolerance {100 * tt[1]:.1f}); GRPO at {g['seconds']:.1f} s (step "
          f"{g['step']}), PODS " + (f"at {q['seconds']:.1f} s (step {q['step']}): speed-up {g['seconds'] / q['seconds']:.2f}x"
                                    if q["seconds"] else f"never in its {q['end_s']:.1f} s: speed-up at most {g['seconds'] / q['end_s']:.2f}x"))

# %% [markdown]
# Whichever arm these readings favour, they rank the arms for one seed on a few questions, with
# evaluations several steps apart: a difference of one question, or of one evaluation, decides them.
# PODS's claim is a better *per-step* signal, visible over many steps on a test set large enough to
# resolve a few points, across several seeds, counted as they should be: the training run is the unit,
# so an arm difference gets its interval over seeds, not over the seeds' pooled questions. Section 8
# reads the ten-seed study that does this at laptop scale.

# %% [markdown]
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
# its $n$ rewards are not all equal, so its kept rows are silent only when the whole group of $n$ is.
#
# The cell prices each arm's update both ways from its own rows. A step's update processes
# $k_\text{every} = $ its kept rows, or $k_\text{skip} = $ kept − silent (at least one: the placeholder
# row). Seconds per processed row $= \sum_\text{steps} U / \sum_\text{steps} \max(k_\text{ran}, 1)$; a step
# under the other pricing costs its own seconds $\times\, \max(k_\text{other}, 1) / k_\text{ran}$ (an
# all-silent step of a skipping run: seconds per row $\times\, k_\text{other}$). It is an estimate: it
# takes an update's seconds as proportional to its rows. It is the rule of
# `minipods.analysis.results.repriced_seconds`, which the summary's re-priced time to target uses: the
# cell checks they give the same totals.

# %%
def paid(r, pricing_):
    """Rows a step's update processes: every kept row, or the live ones (0 when all are silent)."""
    return r["kept_rows"] - r["silent_rows"] if pricing_ == "skip_silent" else r["kept_rows"]


costs = {}
for arm, rs in rows.items():
    ran = pricing[arm]
    per_row = sum(r["update_s"] for r in rs) / sum(max(paid(r, ran), 1) for r in rs)  # s per processed row
    upd = {to: [r["update_s"] if to == ran else (r["update_s"] * max(paid(r, to), 1) / paid(r, ran) if paid(r, ran)
                                                 else per_row * max(paid(r, to), 1)) for r in rs]
           for to in ("every_row", "skip_silent")}  # each step's update seconds under each pricing
    c = {"ran": ran, "steps": len(rs), "per_row": per_row, **{k: float(np.mean([r[k] for r in rs])) for k in
         ("kept_rows", "silent_rows", "rollout_s", "update_s", "step_s", "completion_len_mean")},
         "processed": float(np.mean([max(paid(r, ran), 1) for r in rs])),
         "all_silent": sum(r["silent_rows"] == r["kept_rows"] for r in rs),
         "update_every": float(np.mean(upd["every_row"])), "update_skip": float(np.mean(upd["skip_silent"]))}
    c["step_every"], c["step_skip"] = c["rollout_s"] + c["update_every"], c["rollout_s"] + c["update_skip"]
    costs[arm] = c
    print(f"{arm:18s} | kept {c['kept_rows']:.1f} rows/step, silent {c['silent_rows']:.1f}, processed {c['processed']:.1f} "
          f"as run ({ran}); {c['all_silent']}/{c['steps']} steps all silent | {per_row:.3f} s per processed row"
          f" | mean update s/step: silent rows skipped {c['update_skip']:.2f}, every kept row paid {c['update_every']:.2f}")
    other = "every_row" if ran == "skip_silent" else "skip_silent"
    rep_s = results.repriced_seconds(all_rows[0][arm], ran, other)  # the package's rule, cumulative seconds
    assert abs(rep_s[max(rep_s)] - rs[-1]["elapsed_s"] - sum(upd[other]) + sum(r["update_s"] for r in rs)) < 1e-6
    assert c["update_skip"] <= c["update_every"] + 1e-9 and c["processed"] <= c["kept_rows"]
g, p = costs[GRPO], costs[PODS]
R_run, R_every, R_skip = p["step_s"] / g["step_s"], p["step_every"] / g["step_every"], p["step_skip"] / g["step_skip"]
step_ratios = [pr["step_s"] / gr["step_s"] for gr, pr in zip(rows[GRPO], rows[PODS])]  # same step, same questions
print(f"PODS/GRPO mean step time: as run {R_run:.2f} (step by step {min(step_ratios):.2f}-{max(step_ratios):.2f}); "
      f"both skipping silent rows {R_skip:.2f}; both paying every kept row {R_every:.2f} (estimate)")
print(f"the update's share of a GRPO step: as run {g['update_s'] / g['step_s']:.2f}, every kept row paid "
      f"{g['update_every'] / g['step_every']:.2f}; GRPO's update is {g['update_s'] / g['update_every']:.0%} of its "
      f"every-row price, PODS's {p['update_s'] / p['update_every']:.0%}")

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
    cm_model, cm_tok = load_policy(dtype=cfgs[GRPO]["dtype"], lora_r=16, lora_alpha=32, device=DEVICE)
    cm_cfg = BenchConfig(n=16, max_new_tokens=cfgs[GRPO]["max_new_tokens"], m_values=[2, 4, 8], micro_batch_size=4)
ctx = Context(model=cm_model, tok=cm_tok, device=DEVICE,
              prompt=build_prompt(cm_tok, synthetic_problems(1, seed=0)[0]["question"]))
CM_REPEATS = 3
t4 = time.perf_counter()
cm_runs = [costmodel.part_costmodel(ctx, cm_cfg) for _ in range(CM_REPEATS)]
print(f"measured {CM_REPEATS} times in {time.perf_counter() - t4:.0f} s")

# %%
roll_t, upd_t = {}, {}  # sequences -> each repeat's seconds
for r_ in cm_runs:
    for key, pts in (("rollout_points", roll_t), ("update_points", upd_t)):
        for pt in r_[key]:
            pts.setdefault(pt["sequences"], []).append(pt["seconds"])
for label, pts in (("rollout, one generate of", roll_t), ("update on the kept", upd_t)):
    for k_, ts in pts.items():
        print(f"  {label:25s} {k_:2d} sequences: fastest {min(ts):7.3f} s, median {np.median(ts):7.3f} s, slowest {max(ts):7.3f} s")
cm = costmodel.CostModel(costmodel.fit_line(list(roll_t), [min(v) for v in roll_t.values()]),
                         costmodel.fit_line(list(upd_t), [min(v) for v in upd_t.values()]))
cm_each = [costmodel.CostModel(costmodel.Line(**r_["rollout_fit"]), costmodel.Line(**r_["update_fit"])) for r_ in cm_runs]
print(f"  fit to the fastest: rollout(k) = {cm.rollout.a:.3f} + {cm.rollout.b:.4f} k s (R² {cm.rollout.r2:.3f}); "
      f"update(k) = {cm.update.a:.3f} + {cm.update.b:.4f} k s (R² {cm.update.r2:.3f})")
if SMALL:  # the tiny model's millisecond timings on a busy CPU can tilt a line below 0 s; the mechanics need it above
    cm = costmodel.CostModel(*(costmodel.Line(max(l_.a, 1e-3), max(l_.b, 0.0), l_.r2) for l_ in (cm.rollout, cm.update)))
cm_len = np.mean([pt["tokens"] / pt["sequences"] for r_ in cm_runs for pt in r_["rollout_points"]])
print(f"  mean completion length: the model's rollouts {cm_len:.0f} tokens, the arms' GRPO {g['completion_len_mean']:.0f}, "
      f"PODS {p['completion_len_mean']:.0f} (a row's update time grows with its tokens)")

# %% [markdown]
# **The model against the arms.** The model prices the comparison's step (its $P$, $n$, $m$) with every
# kept row paying, at this moment's timings; the arms ran minutes earlier, skipping silent rows. The cell
# puts the three side by side, the model, the arms priced as the model prices them (section 4's
# every-row estimate) and the arms as run, and splits the gap between the model's PODS/GRPO ratio and
# the arms' into those two steps: $R_\text{run} - R_\text{model} = (R_\text{every} - R_\text{model}) +
# (R_\text{run} - R_\text{every})$.

# %%
P5, n5, m5 = cfgs[GRPO]["prompts_per_step"], cfgs[PODS]["n"], cfgs[PODS]["m"]
n_over_m = n5 / m5
pred = cm.step_seconds(n5, m5, prompts=P5)
R_model, pp = pred["pods"] / pred["grpo"], pred["parts"]
print(f"seconds per step (P={P5}, n={n5}, m={m5})     model (GRPO/PODS) | GRPO arm | PODS arm")
print(f"  rollout (P m | P n)                 {pp['rollout_m']:8.2f}/{pp['rollout_n']:.2f} | {g['rollout_s']:8.2f} | {p['rollout_s']:8.2f}")
print(f"  update, every kept row paid         {pp['update_m']:13.2f} | {g['update_every']:8.2f} | {p['update_every']:8.2f}")
print(f"  update as run ({g['ran']:11s})       {'-':>13s} | {g['update_s']:8.2f} | {p['update_s']:8.2f}")
print(f"break-even gain T_PODS/T_GRPO at n/m = {n_over_m:g}: model {R_model:.2f}; the arms, every kept row paid "
      f"{R_every:.2f}; the arms as run {R_run:.2f}; generation alone G(n)/G(m): arms {p['rollout_s'] / g['rollout_s']:.2f}")
print(f"the gap {R_run - R_model:+.2f} = the same every-row work timed in the arms instead of the model {R_every - R_model:+.2f}"
      f" + the arms' silent-row pricing {R_run - R_every:+.2f}")
share = {"model": pp["update_m"] / pred["grpo"], "every": g["update_every"] / g["step_every"], "run": g["update_s"] / g["step_s"]}
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

# %% [markdown]
# ## 6. The break-even gain, here and on the paper's L40S
#
# If one PODS step is worth `gain` GRPO steps (GRPO's steps to a target / PODS's steps to it), PODS
# reaches the target sooner in wall-clock time **iff**
#
# $$\text{gain} \;>\; \frac{T_\text{PODS}}{T_\text{GRPO}} \quad(\text{the break-even gain}),$$
#
# and its wall-clock speed-up is $\text{gain}\cdot T_\text{GRPO}/T_\text{PODS}$.
#
# **The paper's machine, three readings.** (1) The paper's two step times (Sec. 5): 7.5 s per GRPO step
# ($n = m = 16$) and 10.1 s per PODS step ($n = 64 \to m = 16$), `costmodel.paper_l40s()`. With rollout
# time linear in the rollouts, their difference prices $b_r = (10.1 - 7.5)/48$ s per extra rollout per
# prompt, and for any $n$ at $m = 16$
#
# $$\frac{T_\text{PODS}(n)}{T_\text{GRPO}} = 1 + \Big(\frac nm - 1\Big)\,\frac{10.1 - 7.5}{7.5\,(64/16 - 1)},$$
#
# a straight line through $(1, 1)$ and $(4, 10.1/7.5)$ (a fixed generation cost $a_r$ cancels in
# $T_\text{PODS} - T_\text{GRPO}$: the cell checks it). (2) The plane notebook 06 fits to the step counts
# of all 80 released runs of the max-variance GSM8K settings, $T = c + b_n n + b_m m$ at one prompt per
# step (`costmodel.paper_l40s_model()`): $T(n)/T(m) = 1 + (n/m - 1)\, b_n m / (c + (b_n + b_m) m)$, also a
# line through $(1, 1)$. (3) The runs' own mean step times at 16 → 16 and 64 → 16 (notebook 06, section 5):
# one point at $n/m = 4$. The three differ by rounding and by what the plane smooths; the cell prints
# all three, and their spread is how well the L40S's break-even is known. The paper reports a ~2×
# speed-up at $n/m = 4$, which implies each PODS step was worth $2 \times T_\text{PODS}/T_\text{GRPO}$
# GRPO steps (about 2.7).
#
# **This machine.** The fitted lines give the same curve at the comparison's $P$ and $m$. With linear
# phases all curves are straight lines through $(1, 1)$: their slopes, the extra cost of each further
# multiple of $m$ as a share of a GRPO step, are the whole comparison. The figure adds the arms: as
# run (black diamond) and priced every row (hollow), section 5's gap drawn.

# %%
from minipods.analysis import paper_runs

paper = costmodel.paper_l40s()
T_g, T_p, n_p, m_p = paper["grpo_s"], paper["pods_s"], paper["n"], paper["m"]
b_r_paper = (T_p - T_g) / (n_p - m_p)  # s per extra rollout per prompt (P = 1 folded in)


def two_times_model(a_r):
    """A cost model with the paper's two step times (per prompt, P = 1) and a fixed generation cost a_r."""
    rollout = costmodel.Line(a_r, b_r_paper)
    return costmodel.CostModel(rollout, costmodel.Line(0.0, (T_g - rollout(m_p)) / m_p))


def curve(model, m, prompts=1):
    """Break-even gain T_PODS / T_GRPO at n = r m for each r in ratios; None when a step time is not positive
    (a repeat's fit thrown off by a disturbed timing, e.g. a negative intercept)."""
    try:
        return [model.break_even(int(r * m), m, prompts=prompts)["break_even_gain"] for r in ratios]
    except ValueError:
        return None


ratios = np.arange(1, 9)
per_run = paper_runs.seconds_per_step(paper_runs.paper_study("gsm8k", ["GSM8K-512-16-16", "GSM8K-512-64-16"]))
l40s = {"two step times (7.5, 10.1 s)": curve(two_times_model(0.0), m_p), "plane fitted to 80 runs": curve(costmodel.paper_l40s_model(), m_p)}
assert np.allclose(l40s["two step times (7.5, 10.1 s)"], curve(two_times_model(1.0), m_p))  # a_r cancels
runs_4 = np.mean(per_run["GSM8K-512-64-16"]) / np.mean(per_run["GSM8K-512-16-16"])  # the runs' mean step times
l40s_4 = {**{k: c_[3] for k, c_ in l40s.items()}, "the runs' mean step times": runs_4}  # each reading at n/m = 4
here_curve = curve(cm, m5, P5)
here_curves = [c_ for c_ in (curve(c_m, m5, P5) for c_m in cm_each) if c_] or [here_curve]
here_4 = [here_curve[3]] + [c_[3] for c_ in here_curves]  # at n/m = 4: the fit to the fastest, and each repeat's
slope = {"here": here_curve[1] - here_curve[0], **{k: c_[1] - c_[0] for k, c_ in l40s.items()}}
print("break-even gain at n/m = 4 on the L40S: " + "; ".join(f"{k} {v:.3f}" for k, v in l40s_4.items()))
print(f"here (P={P5}, m={m5}, every kept row paid, the model): {R_model:.3f} at the comparison's n/m = {n_over_m:g}, "
      f"{here_4[0]:.3f} at n/m = 4 ({min(here_4):.3f} to {max(here_4):.3f} over the fastest fit and the "
      f"{len(here_curves)} usable repeats' fits of {CM_REPEATS})")
print("slope per unit of n/m (the extra cost of each further multiple of m, as a share of a GRPO step): "
      + "; ".join(f"{k} {v:.3f}" for k, v in slope.items()))
overlap = min(here_4) <= max(l40s_4.values()) and min(l40s_4.values()) <= max(here_4)
print(f"the range here and the L40S's readings overlap: {overlap}; here is below all of them: "
      f"{max(here_4) < min(l40s_4.values())}; above all: {min(here_4) > max(l40s_4.values())}")

# %% [markdown]
# How to read it: where the range measured here and the L40S's three readings overlap, extra rollouts
# cost about the same share of a step here as on the paper's GPU, priced as the paper's update; where
# this machine's range lies below them all, extra rollouts are relatively cheaper here, above them,
# dearer. The cell's last line says which. The readings of the L40S differ by a few hundredths, which
# is the resolution of any such verdict.
#
# **If a PODS step were worth what the paper's 2× implies.** The cell below takes that gain (an
# assumption: nothing here measured it) and asks the cost model what PODS at $n/m = 4$ would then gain
# here, and up to which $n$ at this $m$ the extra rollouts would still pay: the $n$ at which
# $T_\text{PODS}(n) / T_\text{GRPO}$ reaches the gain, $n_\text{max} = (\text{gain}\;T_\text{GRPO} -
# \text{update}(Pm) - a_r) / (b_r P)$. That extrapolates the gain to every larger $n$ and the rollout
# line beyond the largest batch timed, so it is an upper bound of the model's making, not a measurement.

# %%
paper_gain = costmodel.implied_gain(2.0, T_p, T_g)
here_pay = cm.break_even(4 * m5, m5, prompts=P5, gain=paper_gain)
print(f"the gain the paper's ~2x implies at n/m = 4: {paper_gain:.2f} GRPO steps per PODS step (from {T_p}/{T_g} s)")
print(f"at that gain, PODS at n/m = 4 here: break-even {here_pay['break_even_gain']:.2f}, pays {here_pay['pays']}, "
      f"speed-up {here_pay['speedup']:.2f}x; the extra rollouts would pay up to n = {here_pay['n_max']:.0f} at m = {m5} "
      f"(the rollouts timed went up to {max(roll_t)} sequences)")
print(f"the arms sit {'above' if R_run > R_model else 'below'} the model's curve at n/m = {n_over_m:g} "
      f"({R_run:.2f} vs {R_model:.2f}); priced every row they sit at {R_every:.2f}: section 5 splits the difference")
lessons.plot_break_even(roll_t, upd_t, cm, ratios, here_curve, (np.min(here_curves, axis=0), np.max(here_curves, axis=0)),
                        l40s, {"n_over_m": n_over_m, "run": R_run, "every": R_every, "steps": step_ratios}, f"P={P5}, m={m5}")

# %% [markdown]
# **Exercise 05.2 (predict, then run).** On the paper's L40S a GRPO step (n = m = 16) takes 7.5 s and a PODS
# step (n = 64 → m = 16) 10.1 s; section 6 read off the break-even gain at n/m = 4. With rollout time linear
# in the rollouts (section 6's first reading), predict the break-even gain of PODS at n = 128 → m = 16: how
# many GRPO steps one PODS step must then be worth. Then run the next cell.

# %%
from exercises import check
gain_prediction = None  # your prediction: the break-even gain at n = 128, m = 16

# %%
from minipods.measure import costmodel

paper = costmodel.paper_l40s()  # the two step times: GRPO 16 -> 16, PODS 64 -> 16 (one prompt a step)
b_r = (paper["pods_s"] - paper["grpo_s"]) / (paper["n"] - paper["m"])  # s per extra rollout
for n in (64, 128):
    t_pods = paper["grpo_s"] + b_r * (n - paper["m"])
    print(f"n = {n:3d} -> m = 16: PODS step {t_pods:.2f} s, GRPO step {paper['grpo_s']} s: break-even gain "
          f"{t_pods / paper['grpo_s']:.3f}")

check("05.2", gain_prediction)

# %% [markdown]
# **Exercise 05.3 (implement).** With linear phases, rollout(k) = a_r + b_r k and update(k) = a_u + b_u k, plus a
# fixed cost per step, a GRPO step is fixed + rollout(P m) + update(P m) and a PODS step fixed + rollout(P n) +
# update(P m). Write `n_max(cm, m, prompts, gain)`: the largest n (a real number) at which PODS still pays when
# one PODS step is worth `gain` GRPO steps. The check compares with `CostModel.break_even(...)["n_max"]` on
# random lines.

# %%
from exercises import check
def n_max(cm, m, prompts, gain):
    """cm: a minipods.measure.costmodel.CostModel (cm.rollout.a, cm.rollout.b, cm.update.a, cm.update.b, cm.fixed).
    The n at which gain x T_GRPO = T_PODS(n); float('inf') when extra rollouts cost nothing (cm.rollout.b <= 0)."""
    raise NotImplementedError("05.3: your code here")

check("05.3", n_max)

# %% [markdown]
# **Exercise 05.4 (observe).** The L40S step-cost lines fitted to the paper's 80 runs
# (`costmodel.paper_l40s_model()`: a fixed 4.4 s per step, then seconds per generated and per kept rollout).
# Suppose one PODS step is worth 2 GRPO steps at any n. Change `N` (32, 64, 128, 256, 512) and rerun: which is the
# largest of these at which PODS still pays?

# %%
from exercises import check
from minipods.measure import costmodel

N = 64  # change me: 32, 64, 128, 256, 512
r = costmodel.paper_l40s_model().break_even(N, 16, prompts=1, gain=2.0)
print(f"n = {N} -> m = 16: a PODS step {r['pods_s']:.1f} s vs GRPO {r['grpo_s']:.1f} s; break-even gain "
      f"{r['break_even_gain']:.2f}: PODS {'pays' if r['pays'] else 'does not pay'} at gain 2")
largest_paying_n = None  # your answer: the largest of 32, 64, 128, 256, 512 at which PODS pays

check("05.4", largest_paying_n)

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
#    by 1/(that number); the 95% Wilson interval of $k$ silent groups out of $N$ says how far chance
#    alone could move it.
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
from minipods.analysis.gradients import predicted_silent_fraction

silent = {}
for arm, rs in rows.items():
    n_a, P_a = cfgs[arm]["n"], cfgs[arm]["prompts_per_step"]
    per_step = [round(r["zero_std_frac"] * P_a) for r in rs]  # silent groups in each step
    assert all(abs(k - r["zero_std_frac"] * P_a) < 1e-6 for k, r in zip(per_step, rs))
    k, total = sum(per_step), len(rs) * P_a
    sa = silent[arm] = dict(k=k, total=total, frac=k / total, ci=wilson_interval(k, total), n=n_a,
                            p=float(np.mean([r["correct_frac"] for r in rs])),
                            pred=float(np.mean([predicted_silent_fraction([r["correct_frac"]], n_a) for r in rs])))
    print(f"{arm:18s} n={n_a}: silent groups {k}/{total} = {sa['frac']:.2f} [95% CI {sa['ci'][0]:.2f}, {sa['ci'][1]:.2f}] | "
          f"mean pass rate {sa['p']:.3f} | predicted p^n+(1-p)^n (common p per step) {sa['pred']:.2f} | observed minus "
          f"predicted {sa['frac'] - sa['pred']:+.2f} | steps where the format bonus fired "
          f"{sum(r.get('format_reward_mean', 0) > 0 for r in rs)}/{len(rs)}")
print("step by step (silent groups of P; pass rate):")
for g_row, p_row in zip(rows[GRPO], rows[PODS]):
    print(f"  step {g_row['step']}: GRPO {round(g_row['zero_std_frac'] * P5)}/{P5} (p {g_row['correct_frac']:.2f}) | "
          f"PODS {round(p_row['zero_std_frac'] * P5)}/{P5} (p {p_row['correct_frac']:.2f})")
sg, sp_ = silent[GRPO], silent[PODS]
same_p = {k: predicted_silent_fraction([sg["p"]], k) for k in (sg["n"], sp_["n"])}  # both group sizes at GRPO's pass rate
apart = sp_["ci"][0] > sg["ci"][1] or sg["ci"][0] > sp_["ci"][1]
print(f"at GRPO's mean pass rate {sg['p']:.3f}: a group of {sp_['n']} is silent {same_p[sp_['n']]:.2f} of the time, "
      f"a group of {sg['n']} {same_p[sg['n']]:.2f} | the two arms' Wilson intervals are apart: {apart}")
assert same_p[sp_["n"]] <= same_p[sg["n"]] + 1e-12  # at one pass rate, a larger group is silent less often
if not SMALL:
    assert not apart, "the text says this run cannot tell the arms' silent fractions apart"

# %% [markdown]
# With a dozen groups per arm each Wilson interval is a few tenths wide, and in a full run the two
# overlap (asserted): whichever arm's fraction came out higher, this run cannot tell them apart. The
# prediction at one common pass rate says what to expect with more groups: PODS's larger groups are
# silent less often (printed, and true for any pass rate). Where an arm's observed fraction sits above
# its prediction, pass rates that differ between prompts raised it; below, the format bonus split groups
# or chance did, with this few groups.

# %% [markdown]
# ## 8. What the repository measured: the ten-seed study on the paper's design
#
# One seed ranks two arms for one run. The repository's measured answer is the ten-seed study
# `studies/laptop10` (`python -m minipods.compare --preset laptop --seeds 0,1,2,3,4,5,6,7,8,9`;
# docs/results.md): the paper's design at laptop scale, SmolLM2-135M on synthetic problems, one prompt a
# step, GRPO $n = m = 4$ against max-variance PODS $n = 16 \to m = 4$ and random PODS $16 \to 4$, the
# authors' loss, every kept row paid, 900 s of training per arm, the run as the unit. The cells read its
# run folders with the same seed-level summary `compare` prints:
#
# * **time to GRPO's level, per seed**, in training seconds and in steps: the target of a seed is GRPO's
#   plateau in that seed; a seed whose PODS never gets there is *censored*: it enters at its run's end, so
#   its time is a lower bound and the speed-up an upper bound, printed with "≤". The speed-up is the
#   geometric mean of the per-seed ratios, with a t-interval on their logs.
# * **the steps-worth against the break-even** (section 6's framework, measured): a PODS step is worth
#   $w$ = GRPO's steps to the target / PODS's steps to it (each the *restricted mean* over seeds: the mean
#   time to the target with censored seeds counted at their run's end, a lower bound for PODS here, so
#   $w$ is an upper bound), and it costs $c = \bar T_\text{PODS} / \bar T_\text{GRPO}$ GRPO steps (the
#   mean seconds per step). PODS pays iff $w > c$.
# * the final accuracies, and what ten seeds can resolve.

# %%
import json
from minipods.analysis.summary import format_difference, resolve_lines

LAPTOP = Path(minipods.__file__).resolve().parent.parent / "studies" / "laptop10"
lap = None
if (LAPTOP / "comparison.json").is_file():  # an installed package without the repository's studies/ skips this
    lap_meta = json.loads((LAPTOP / "comparison.json").read_text())
    lap_dirs = results.seed_dirs(LAPTOP, lap_meta)
    lap_study = results.read_study(lap_dirs)
    BUDGET = results.read_config(lap_dirs[lap_meta["seeds"][0]]["grpo"])["budget_s"]  # each arm's training seconds
    lap = summarize_study(lap_study, lap_meta.get("baseline", "grpo"), PODS, budget_s=BUDGET,
                          note=plots.AVERAGED_NOTES["laptop"])  # section 8b's statistic: chosen post hoc
    lt = lap["time"]["arms"]
    print(f"{'seed':>4} | {'target % (tol)':>14} | {'GRPO s (step)':>15} | {'PODS s (step)':>18} | {'random s (step)':>18}")
    for s_ in lap["seeds"]:
        tt = lap["time"]["targets"][s_]
        cells = []
        for a in ("grpo", PODS, "pods_random"):
            v = lt[a]["per_seed"][s_]
            cells.append(f"{v['seconds']:.0f} ({v['step']})" if v["seconds"] is not None else f"never (≥{v['end_s']:.0f}, {v['end_step']})")
        print(f"{s_:4d} | {100 * tt[0]:7.1f} ({100 * tt[1]:.1f}) | {cells[0]:>15} | {cells[1]:>18} | {cells[2]:>18}")
    sp = lt[PODS]["speedup"]
    cens = "≤" if lt[PODS]["censored"] else ""
    print(f"PODS reached GRPO's level {cens}{sp['ratio']:.2f}x as fast [{sp['lo']:.2f}, {sp['hi']:.2f}] over {sp['k']} seeds "
          f"({lt[PODS]['reached']} of {lt[PODS]['of']} reached it, {lt[PODS]['censored']} censored); the paper's 1.7x is "
          f"{'above' if sp['hi'] < 1.7 else 'inside' if sp['lo'] <= 1.7 else 'below'} that interval")
    assert sp["hi"] < 1.7  # the text below: the paper's 1.7-2x lies above what this study measured
    step_s = {a: [np.mean([r["step_s"] for r in results.training_rows(results.read_rows(lap_dirs[s_][a]))]) for s_ in lap["seeds"]]
              for a in ("grpo", PODS)}  # each seed's mean seconds per step
    steps = {a: lt[a]["restricted_step"]["mean"] for a in ("grpo", PODS)}  # restricted means of the steps to the target
    worth, cost = steps["grpo"] / steps[PODS], np.mean(step_s[PODS]) / np.mean(step_s["grpo"])
    print(f"steps to GRPO's level (restricted means): GRPO {steps['grpo']:.1f}, PODS {'≥' if cens else ''}{steps[PODS]:.1f} -> "
          f"a PODS step was worth {cens}{worth:.3f} GRPO steps")
    print(f"seconds per step (mean over seeds): GRPO {np.mean(step_s['grpo']):.2f}, PODS {np.mean(step_s[PODS]):.2f} -> "
          f"a PODS step cost {cost:.3f} GRPO steps; PODS pays iff worth > cost: {worth > cost}")
    assert worth < cost  # the text below: the fewer steps did not pay for the dearer ones
    print(f"final accuracy, PODS minus GRPO: {format_difference(lap['versus']['grpo'], per_seed=False)}")
    print(f"final accuracy, max-variance minus random: {format_difference(lap['versus']['pods_random'], per_seed=False)}")
    print("\n".join(resolve_lines(lap)))  # the lines compare's summary.md ends with
else:
    print(f"{LAPTOP} is not here: the laptop study's numbers are in docs/results.md")

# %% [markdown]
# **Reading it.** PODS did not reach GRPO's level sooner at this scale: the speed-up's interval lies below
# the paper's 1.7× (asserted), and it is censored where a PODS seed never got there. Why, in the terms of
# section 6: PODS needed fewer steps, so a PODS step was worth more than one GRPO step, but not as much
# more as it cost: worth below cost (both printed, and asserted), so the fewer steps did not pay for the
# dearer ones. (The ratio of the restricted means is not the geometric mean of the per-seed speed-ups:
# two averages of the same seeds, close but not equal.) The resolve lines say what ten seeds cannot see:
# a speed-up or an accuracy difference below those sizes would most likely be missed, so the reading is
# "no speed-up of the paper's size", not "no speed-up".

# %% [markdown]
# **Exercise 05.1 (implement).** A study gives, per seed (one training run per arm), each arm's 0/1 answers to
# that seed's held-out questions. The run is the unit: write `seed_interval(per_seed)`, the mean over seeds of
# PODS's accuracy minus GRPO's with its 95% Student-t interval over seeds (`t975(df)` gives the quantile).
# The check compares with minipods' `mean_interval` on random studies of 2 to 10 seeds.

# %%
from exercises import check
import math
from minipods.stats import t975  # Student's t, two-sided 95%, for df degrees of freedom

def seed_interval(per_seed):
    """per_seed: {seed: (grpo, pods)}, each a list of 0/1 per question of that seed. Returns (mean, lo, hi): the
    mean over seeds of (PODS's accuracy - GRPO's) and its 95% t-interval over seeds (sample sd, k - 1 df)."""
    raise NotImplementedError("05.1: your code here")

check("05.1", seed_interval)

# %% [markdown]
# ### 8b. Time-averaged accuracy (chosen after the seeds were seen: post hoc)
#
# Time to target reads each curve at one crossing, on a grid of evaluations, against a threshold,
# with censoring; final accuracy reads one evaluation. The **time-averaged accuracy** uses every
# evaluation of a run and needs none of that: the area under accuracy against training time from 0 to
# the budget $B$, divided by $B$,
#
# $$\bar a = \frac1B \int_0^B a(t)\,dt \approx \frac1B \sum_i (t_{i+1} - t_i)\,\frac{a_i + a_{i+1}}{2},$$
#
# with trapezoids between evaluations, an evaluation past the budget interpolated to it, and the last
# value held if a run ends before it (`minipods.analysis.summary.time_averaged`; the cell computes one
# seed's by hand and checks it). A run that learns sooner has a larger area; one collapsed evaluation
# moves it by that evaluation's share of the time only. **For this study it is post hoc**: it was chosen
# after its ten seeds had been seen, so it is not the study's primary statistic and its interval is read
# as a description, not a test. Beside it: each statistic's spread over seeds (the standard deviation
# of the per-seed PODS-minus-GRPO values; for time to target, of the per-seed log speed-ups), because
# against the same effect the statistic with the smaller spread is the sharper instrument.

# %%
from minipods.analysis.summary import time_averaged

if lap:
    pts = lap_study[lap["seeds"][0]]["grpo"]  # one seed's GRPO evaluations, by hand:
    ts, ys = [q.seconds for q in pts], [q.accuracy for q in pts]
    ts, ys = ([0.0] + ts, ys[:1] + ys) if ts[0] > 0 else (ts, ys)  # from 0 s, at the first evaluation's value
    grid = [t for t in ts if t < BUDGET] + [BUDGET]
    by_hand = np.trapezoid(np.interp(grid, ts, ys), grid) / BUDGET  # np.interp holds the last value past the end
    print(f"seed {lap['seeds'][0]}, GRPO: time-averaged accuracy {100 * by_hand:.1f}% over {BUDGET:.0f} s (final {100 * ys[-1]:.1f}%)")
    assert abs(by_hand - time_averaged(pts, BUDGET)) < 1e-9
    print("per arm, mean over seeds [t 95% CI]: " + ", ".join(
        f"{a} {100 * m['mean']:.1f} [{100 * m['lo']:.1f}, {100 * m['hi']:.1f}]" for a, m in lap["averaged"].items()))
    for a in ("grpo", "pods_random"):
        print(f"time-averaged, max-variance PODS minus {a}: {format_difference(lap['averaged_versus'][a], per_seed=False)}")
    logs = [np.log(lt["grpo"]["per_seed"][s_]["seconds"] / (v["seconds"] or v["end_s"]))
            for s_, v in lt[PODS]["per_seed"].items() if lt["grpo"]["per_seed"][s_]["seconds"]]  # censored: at the end
    sd = {"final accuracy (points)": 100 * lap["versus"]["grpo"]["seeds"]["sd"],
          "time-averaged accuracy (points)": 100 * lap["averaged_versus"]["grpo"]["seeds"]["sd"],
          "time to target (log speed-up)": float(np.std(logs, ddof=1))}
    print("spread over seeds of PODS minus GRPO (SD): " + "; ".join(f"{k} {v:.2f}" for k, v in sd.items()))
    half = {k: lap[k]["grpo"]["seeds"] for k in ("versus", "averaged_versus")}
    print(f"interval half-widths: final {100 * (half['versus']['hi'] - half['versus']['lo']) / 2:.1f} points, "
          f"time-averaged {100 * (half['averaged_versus']['hi'] - half['averaged_versus']['lo']) / 2:.1f} points")
    assert sd["time-averaged accuracy (points)"] < sd["final accuracy (points)"]  # the text below
    assert half["averaged_versus"]["lo"] <= 0 <= half["averaged_versus"]["hi"]  # not shown better or worse

# %% [markdown]
# The time-averaged difference spreads over seeds about half as much as the final-accuracy difference
# (printed; asserted), so its interval is about half as wide: against an effect of the same size in
# points, it is the sharper of the two instruments. Its interval still includes 0: over the 900 s, max-
# variance PODS was not shown better or worse than GRPO on average. The log speed-up is on another
# scale and cannot be compared by its SD alone; its resolve line above says what it can see. That the
# statistic was chosen after these seeds were seen is why it stays a description here: a study that
# declares it before its seeds run (docs/class_study.md) can test with it.

# %% [markdown]
# ### 8c. The reference class: a primary statistic fixed before its seeds ran
#
# `studies/class12` (docs/class_study.md) is the study section 8b asks for: 12 seeds of `--preset class`
# (600 s of training per arm, 5 evaluations of 64 held-out questions, GRPO $n = m = 4$ against max-variance
# PODS $16 \to 4$, the authors' loss and pricing), each run as a student hands it in
# (`python -m minipods.compare --preset class --seed S --output-dir class-S`) and merged with
# `python -m minipods.compare --merge`. Its primary statistic, the time-averaged accuracy of PODS minus GRPO
# with the seed as the unit, and the rule that reads it were committed before any seed ran: here the
# interval is a test, not a description. The cell reads the merged study's run folders, prints the
# plan's reading, what 12 seeds can resolve, and what a class of 40 at the same spread would resolve.

# %%
from minipods.analysis.summary import Z80

CLASS = LAPTOP.parent / "class12"
cls = None
if (CLASS / "comparison.json").is_file():
    cls_meta = json.loads((CLASS / "comparison.json").read_text())
    assert cls_meta["primary"] == "time_averaged"  # written into each hand-in's comparison.json by the preset
    cls_dirs = results.seed_dirs(CLASS, cls_meta)
    cls_budget = results.read_config(cls_dirs[cls_meta["seeds"][0]]["grpo"])["budget_s"]
    cls = summarize_study(results.read_study(cls_dirs), "grpo", PODS, budget_s=cls_budget,
                          note=plots.AVERAGED_NOTES[cls_meta["primary"]])
    prim = cls["averaged_versus"]["grpo"]["seeds"]
    ct = cls["time"]["arms"][PODS]
    print(f"{len(cls['seeds'])} seeds, {cls_budget:.0f} s of training per arm")
    print(f"primary, time-averaged accuracy, PODS minus GRPO: {format_difference(cls['averaged_versus']['grpo'])}")
    print(f"secondary, final accuracy, PODS minus GRPO: {format_difference(cls['versus']['grpo'], per_seed=False)}")
    print(f"secondary, time to GRPO's plateau: {'≤' if ct['censored'] else ''}{ct['speedup']['ratio']:.2f}x "
          f"[{ct['speedup']['lo']:.2f}, {ct['speedup']['hi']:.2f}] ({ct['reached']} of {ct['of']} reached it)")
    cls_reading = ("PODS learns faster here" if prim["lo"] > 0 else "PODS learns slower here" if prim["hi"] < 0
                   else "not resolved: the interval holds 0")
    print(f"the plan's reading: {cls_reading}")
    assert cls_reading.startswith("not resolved")  # the reading below
    print("\n".join(resolve_lines(cls)))
    for k_ in (len(cls["seeds"]), 40):  # the same spread, more students
        se = prim["sd"] / math.sqrt(k_)  # the summary's resolve lines, at k_ seeds: t975 se and (t975 + Z80) se
        print(f"{k_} seeds at this SD ({100 * prim['sd']:.1f} points): ±{100 * t975(k_ - 1) * se:.1f} points; a true "
              f"difference of ~{100 * (t975(k_ - 1) + Z80) * se:.1f} points found 4 times in 5")
else:
    print(f"{CLASS} is not here: the class study's numbers are in docs/class_study.md")

# %% [markdown]
# **Reading it.** The class study does what the laptop study could not: its statistic and its rule were
# fixed before its seeds ran, so its interval is a test. It holds 0 (asserted): over 600 s, max-variance
# PODS was not shown to learn faster or slower than GRPO at this scale. It is a bounded "not resolved", not
# "no difference": the resolve lines say what 12 seeds would have missed, and 40 students at the same
# spread would narrow the interval about twofold (printed).

# %% [markdown]
# ## 9. Takeaways
#
# PODS trades cheap, parallel inference for dearer training: generate many rollouts, train on the few
# with the largest reward spread. Its extra cost per step is the extra generation *minus* any difference
# in what the two updates pay for: an update that skips silent rows makes vanilla GRPO's update cheaper
# exactly when its groups carry no signal, which the paper's update does not. Its gain, more signal per
# update, shows only over many steps, many test questions and several seeds. The harness, figures and
# summary are the same everywhere: `python -m minipods.compare --small` here, `--preset paper` on a GPU.
# The card below is assembled from this notebook's numbers.

# %%
fin = paired["lenient"]
card = f"""**On a card** (from this run, {'SMALL' if SMALL else 'full'} mode).

* PODS step = rollout(P n) + update(P m kept); GRPO step = rollout(P m) + update(P m kept); an update that skips \
silent rows pays only for the live ones: here GRPO's update cost {g['update_s'] / g['update_every']:.0%} of its every-row price, PODS's {p['update_s'] / p['update_every']:.0%}.
* PODS pays iff one PODS step is worth more than T_PODS / T_GRPO GRPO steps. At this run's n/m = {n_over_m:g}: the arms \
as run {R_run:.2f}, every kept row paid {R_every:.2f}, the cost model {R_model:.2f}.
* At n/m = 4, priced as the paper's update: here {here_4[0]:.2f} ({min(here_4):.2f}-{max(here_4):.2f} over repeated timings); \
the L40S {min(l40s_4.values()):.2f}-{max(l40s_4.values()):.2f} (its two step times, the plane fitted to its runs, the runs' mean step times).
* This run's final evaluation: PODS minus GRPO {100 * fin['diff']:+.1f} points [{100 * fin['ci95'][0]:+.1f}, {100 * fin['ci95'][1]:+.1f}] \
on {fin['n']} questions: one seed, a statement about these questions only.
* Silent groups: GRPO {sg['k']}/{sg['total']}, PODS {sp_['k']}/{sp_['total']}; at one pass rate a group of {sp_['n']} is silent no more often than one of {sg['n']} ({same_p[sp_['n']]:.2f} vs {same_p[sg['n']]:.2f} at GRPO's)."""
if lap:
    card += (f"\n* The ten-seed study on the paper's design: time to GRPO's level {cens}{sp['ratio']:.2f}x [{sp['lo']:.2f}, {sp['hi']:.2f}]; "
             f"a PODS step worth {cens}{worth:.3f} GRPO steps against a cost of {cost:.3f}; final accuracy, PODS minus GRPO, "
             f"{100 * lap['versus']['grpo']['seeds']['mean']:+.1f} points [{100 * lap['versus']['grpo']['seeds']['lo']:+.1f}, "
             f"{100 * lap['versus']['grpo']['seeds']['hi']:+.1f}].")
if cls:
    card += (f"\n* The reference class ({len(cls['seeds'])} seeds, its primary fixed before they ran): time-averaged "
             f"accuracy, PODS minus GRPO, {100 * prim['mean']:+.1f} points [{100 * prim['lo']:+.1f}, {100 * prim['hi']:+.1f}]: {cls_reading}.")
card += "\n* Measure both lines, and what your update pays for, on your own machine before choosing n."
display(Markdown(card))

# %%
train_s = {arm: rs[-1]["elapsed_s"] for arm, rs in rows.items()}
print(f"notebook ran in {time.perf_counter() - T0:.0f} s ({'SMALL' if SMALL else 'full'} mode); the comparison's cell "
      f"{T_COMPARE:.0f} s; the arms' training seconds (evaluations besides) "
      + ", ".join(f"{arm} {s_:.1f} s" + (" (reused from an earlier run: not in this total)" if reused[arm] or saved else "")
                  for arm, s_ in train_s.items()))
