# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 05 · PODS vs. GRPO: what a comparison can resolve
#
# > * **You will learn:** (1) to read a PODS-vs-GRPO study with the training run as the unit, one statistic at a time: a paired difference per seed, its mean and Student-t interval, the sign-flip p, and what the seeds' spread lets them resolve; (2) what one live run can and cannot show; (3) what a PODS step costs against a GRPO step, here and on the paper's L40S, and the break-even gain.
# > * **Comes first:** 01–04.
# > * **Background:** PPO's probability ratio and clipped objective, on which GRPO's loss is built (Schulman et al. 2017, *Proximal Policy Optimization Algorithms*, Sec. 3; notebook 04); a Student-t confidence interval for a mean (any statistics text, e.g. OpenIntro Statistics, Sec. 7.1); a sign-flip (paired permutation) test (Good, *Permutation Tests*, or the `minipods.stats.sign_flip_p` docstring).
# > * **Time here** (written by `scripts/run_notebooks.py` from the run that made this page, 2026-12-05: AMD EPYC, cpu family 23 model 1, 2 threads): full mode 12 min 33 s (the last cell's 753 s), of it section 5 (a live run: watch GRPO learn) 11 min 22 s and section 6 (what a step costs, here and on the paper's L40S) 1 min 10 s.
# > * **You should see:** in sections 1–4, the 12-seed class study's PODS-minus-GRPO difference with an interval that holds 0, and what 12 and 40 seeds can resolve; in section 5, GRPO's accuracy rising in this notebook's own run; in section 6, a PODS step's cost beside the L40S's.
#
# **Question.** The paper (Xu, Savani, Fang, Kolter, *Not All Rollouts are Useful: Down-Sampling
# Rollouts in LLM Reinforcement Learning*, TMLR 2026, Fig. 1, Sec. 5) reports that on one L40S GPU with
# Qwen2.5-3B-Instruct on GSM8K, GRPO-PODS generating $n = 64$ rollouts and updating on the $m = 16$ of
# maximal reward variance "achieves the peak test accuracy of vanilla GRPO" ($n = m = 16$) **at least
# 1.7× faster** in wall-clock time. What does a comparison at classroom scale say about that claim, and
# how sure can it be?
#
# The page answers in three parts. **Sections 1–4** read the repository's two committed studies, each
# several seeds of both arms run on a 2-core CPU: the class study `studies/class12` (12 seeds, its
# primary statistic fixed before they ran; docs/class_study.md) and the laptop study `studies/laptop10`
# (10 seeds; docs/results.md). One statistic is introduced at a time, where it is first needed.
# **Section 5** trains GRPO here, on one seed, long enough to learn visibly, and says what that one run
# can and cannot show. **Section 6** adds a few PODS steps from the same start, prices a step of each arm and asks how much better a
# PODS step must be to pay for itself. Every number below is printed by a cell from the runs' own files;
# where the text reads a number, an assert in the cell keeps that reading true.
#
# | mode | model | live run (section 5) |
# |---|---|---|
# | SMALL (tests) | tiny random 2-layer model | GRPO $n=m=2$, 3 steps; PODS $4 \to 2$, 2 steps: mechanics only |
# | full | SmolLM2-135M-Instruct, synthetic word problems | the `class` preset's GRPO ($n=m=4$, one prompt a step), 40 steps, 64 test questions; its PODS ($16 \to 4$) for 4 steps, to price a step |
#
# **Set-up.** The first cell imports minipods (installed with `pip install -e .` in the repository:
# scripts/setup.sh does it) and this folder's exercise checks, `exercises.py` (Jupyter starts the kernel
# in the notebook's own folder). On Colab or another fresh runtime, first run docs/gpu.md's install cell ("On a
# Colab T4": clone into `/content/minipods`, `pip install -r requirements-colab.txt`,
# `pip install --no-deps -e .`) and restart the runtime once. Sections 1–4 read the repository's
# `studies/` folder, so the package must come from a clone. Everything here runs on the CPU, on a GPU
# runtime too (`DEVICE = "cpu"`): section 6 prices a CPU.

# %%
import os, sys, time, warnings
from pathlib import Path

if "google.colab" in sys.modules and Path("/content/minipods/notebooks").is_dir():
    os.chdir("/content/minipods/notebooks")  # Colab, after docs/gpu.md's install cell: work in the clone's notebooks/
try:
    import minipods
    import exercises  # this folder's exercise checks (sections 2 and 6)
except ImportError as e:
    raise SystemExit(f"{e.name} not found: run `pip install -e .` in the minipods repository and open this notebook "
                     "from its notebooks/ folder (on Colab: docs/gpu.md's install cell, then restart)") from None
import numpy as np
import torch
from IPython.display import Markdown, display

from minipods.analysis import compare, results
from minipods.twins.tiny import tiny_policy

DEVICE = "cpu"  # this notebook times a CPU: on a GPU runtime too, its models stay on the CPU
SMALL = os.environ.get("MINIPODS_NB_SMALL") == "1"  # tiny sizes (the test suite sets this)
warnings.filterwarnings("ignore", category=FutureWarning)
T0 = time.perf_counter()
torch.manual_seed(0)
print(f"{'SMALL' if SMALL else 'full'} mode | torch {torch.__version__} | {torch.get_num_threads()} CPU threads | "
      f"models on {DEVICE}" + (" (a GPU is present and left alone)" if torch.cuda.is_available() else ""))

# %% [markdown]
# ## 1. One seed, one number: the paired difference
#
# The class study ran `python -m minipods.compare --preset class --seed S` for 12 seeds $S$ (one student
# each): SmolLM2-135M on synthetic word problems, one prompt a step, GRPO $n = m = 4$ against max-variance
# PODS $16 \to 4$, 600 s of training per arm, evaluated every 150 s on 64 held-out questions. The two arms
# of one seed share everything that a seed fixes (the initial model, the order of the training problems,
# the test questions), so each seed gives one **paired difference**: PODS's accuracy minus GRPO's, here
# at the final evaluation.
#
# Why the seed, and not the question, is the unit: the 64 answers of one arm in one seed all come from
# one trained model. Train again with another seed and that model changes (other problems first, other
# sampled rollouts), and with it all 64 answers at once. The variation the claim is about, "PODS trains
# better than GRPO", is that run-to-run variation, so a study has as many independent observations as it
# has seeds. The cell reads the study through the package's own reader (`minipods.analysis.results`,
# as `compare` does) and prints each seed's difference.

# %%
import math
from minipods.analysis.summary import summarize_study
from minipods.analysis.plots import AVERAGED_NOTES

STUDIES = Path(minipods.__file__).resolve().parent.parent / "studies"
GRPO, PODS = "grpo", "pods_max_variance"


def read_reference(name):
    """A committed study, as `compare` reads it: seed -> arm -> evaluations, and its summary (run = unit)."""
    folder = STUDIES / name
    if not (folder / "comparison.json").is_file():
        raise SystemExit(f"{folder} is not here: sections 1-4 need the repository's studies/ (clone it; docs/gpu.md)")
    meta = results.read_json(folder / "comparison.json")
    dirs = results.seed_dirs(folder, meta)
    budget = results.read_config(dirs[meta["seeds"][0]][GRPO])["budget_s"]  # each arm's training seconds
    study = results.read_study(dirs)
    note = AVERAGED_NOTES.get(meta.get("primary")) or AVERAGED_NOTES["laptop"]
    return study, summarize_study(study, GRPO, PODS, budget_s=budget, note=note), budget, dirs


cls_study, cls, CLS_BUDGET, cls_dirs = read_reference("class12")
fin = cls["versus"][GRPO]  # PODS minus GRPO at each seed's final evaluations
print(f"the class study: {len(cls['seeds'])} seeds, {CLS_BUDGET:.0f} s of training per arm\n")
print(f"{'seed':>4} | {'GRPO final':>10} | {'PODS final':>10} | PODS minus GRPO")
for s_ in cls["seeds"]:
    g_, p_ = cls_study[s_][GRPO][-1], cls_study[s_][PODS][-1]
    d_ = fin["per_seed"][s_]["diff"]
    assert abs(d_ - (p_.accuracy - g_.accuracy)) < 1e-12 and g_.n == p_.n  # the same questions, one difference
    print(f"{s_:4d} | {round(g_.accuracy * g_.n):3d}/{g_.n} {100 * g_.accuracy:4.1f}% | "
          f"{round(p_.accuracy * p_.n):3d}/{p_.n} {100 * p_.accuracy:4.1f}% | {100 * d_:+6.1f} points")
diffs = np.array([v["diff"] for v in fin["per_seed"].values()])
print(f"\n{(diffs > 0).sum()} seeds favour PODS, {(diffs < 0).sum()} GRPO, {(diffs == 0).sum()} tie; "
      f"from {100 * diffs.min():+.1f} to {100 * diffs.max():+.1f} points")
assert diffs.min() < -0.1 and diffs.max() > 0.1  # the reading below: single seeds point both ways, by 10+ points

# %% [markdown]
# **Reading it.** Single seeds point both ways, by more than 10 points each way (asserted): a student who
# ran one seed could have concluded "PODS wins by 17 points" or "GRPO wins by 14" from the same code.
# One seed ranks nothing; the question is what the 12 together say.

# %% [markdown]
# ## 2. The mean over seeds and its Student-t interval
#
# The natural estimate is the mean of the $k$ per-seed differences $d_1, \dots, d_k$. How far it could
# be from the true mean difference depends on how much the $d_i$ scatter: with $s$ their sample standard
# deviation, the mean's standard error is $s/\sqrt k$, and the 95% interval is
#
# $$\bar d \pm t_{0.975,\,k-1}\,\frac{s}{\sqrt k}.$$
#
# The multiplier is Student's $t$ quantile with $k - 1$ degrees of freedom rather than the normal 1.96
# because $s$ itself is estimated from only $k$ numbers (with 12 seeds, $t = 2.20$; with 3, 4.30). The
# cell computes it by hand and checks it against the package's summary (`summarize_study`, what
# `compare` prints).
#
# The package also prints a **pooled** interval, over all 12 × 64 questions as if each were an
# independent coin. They are not independent draws: each seed's 64 answers share one trained model
# (section 1), so a pooled interval measures only the noise of these questions, never the run-to-run
# noise, and is far too narrow to rank the arms. The cell prints it beside the seed interval, with that
# warning, to show the difference.

# %%
from minipods.stats import t975

k = len(diffs)
mean, sd = diffs.mean(), diffs.std(ddof=1)  # ddof=1: the sample standard deviation
half = t975(k - 1) * sd / math.sqrt(k)
m_ = fin["seeds"]
print(f"mean of {k} per-seed differences {100 * mean:+.1f} points, SD {100 * sd:.1f}, standard error "
      f"{100 * sd / math.sqrt(k):.1f}, t(0.975, {k - 1}) = {t975(k - 1):.2f}")
print(f"95% interval over seeds: {100 * mean:+.1f} [{100 * (mean - half):+.1f}, {100 * (mean + half):+.1f}] points")
assert abs(mean - m_["mean"]) < 1e-12 and abs(mean - half - m_["lo"]) < 1e-12 and abs(mean + half - m_["hi"]) < 1e-12
pool = fin["pooled"]
print(f"pooled over {pool['n']} questions (NOT independent draws: each seed's {pool['n'] // k} answers share one "
      f"trained model; this interval is about these questions only): {100 * pool['diff']:+.1f} "
      f"[{100 * pool['ci95'][0]:+.1f}, {100 * pool['ci95'][1]:+.1f}], "
      f"{half / ((pool['ci95'][1] - pool['ci95'][0]) / 2):.1f}x narrower than the seeds allow")
assert m_["lo"] <= 0 <= m_["hi"]  # the reading below: the seed interval holds 0
assert pool["ci95"][1] - pool["ci95"][0] < m_["hi"] - m_["lo"]  # the pooled interval is the narrower one

# %% [markdown]
# **Reading it.** The seed interval holds 0 (asserted): at the final evaluation, 12 seeds did not show
# PODS better or worse than GRPO. Its width, about ±7 points, comes from the seeds' spread of about 11
# points (section 1's table). The pooled interval is much narrower, and that narrowness is the error:
# it would tell the same story if all 768 answers came from a single training run.

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
# ## 3. The sign-flip p
#
# The interval leans on the $d_i$ being roughly normal. A test that does not: **if PODS and GRPO train
# equally well**, each seed's difference is as likely to come out $+d_i$ as $-d_i$ (swap the arms' labels
# and nothing changes). So flip the signs of the 12 differences in all $2^{12} = 4096$ ways and count how
# often the mean comes out at least as far from 0 as the observed one: that share is the exact two-sided
# **sign-flip p** (`minipods.stats.sign_flip_p`). A small p says the observed mean would be rare if the
# arms were equal. It can never be below $2/2^k$ (only the observed pattern and its mirror image are as
# extreme), so 5 seeds can never reach $p < 0.05$, whatever the data.

# %%
import itertools

signs = np.array(list(itertools.product((1, -1), repeat=k)))  # all 2^k sign patterns, one per row
flipped = np.abs(signs @ diffs) / k  # |mean| under each pattern
p_hand = float(np.mean(flipped >= abs(mean) - 1e-12))
print(f"{len(signs)} sign patterns; {int(np.sum(flipped >= abs(mean) - 1e-12))} give a |mean| of at least "
      f"{100 * abs(mean):.1f} points: sign-flip p = {p_hand:.2f} (the smallest possible with {k} seeds: {2 / 2 ** k:.5f})")
assert abs(p_hand - m_["p"]) < 1e-9  # the package's p, by hand
assert p_hand > 0.05  # the reading below: the interval and the test agree

# %% [markdown]
# **Reading it.** p is far above 0.05 (asserted): the observed mean is what equal arms would produce
# often. The interval and the test agree, as they usually do; where they disagree, the test's fewer
# assumptions make it the safer of the two with this few seeds.

# %% [markdown]
# ## 4. The study's own statistic, and what its spread lets n seeds resolve
#
# **The class study's primary statistic.** A final evaluation reads one point of each curve. The class
# study fixed, before its seeds ran, a statistic that uses every evaluation: the **time-averaged
# accuracy**, the area under accuracy against training time from 0 to the 600 s budget, divided by 600 s
# (trapezoids between evaluations; `minipods.analysis.summary.time_averaged`; the cell computes one
# seed's by hand). An arm that learns sooner has the larger area. Its PODS-minus-GRPO difference per seed is read exactly as above: mean, t-interval,
# sign-flip p. Because the statistic and the rule ("PODS learns faster if the interval lies above 0")
# were written down first, this interval is a test, not a description chosen after seeing the data.
#
# **What the spread lets n seeds resolve.** An interval that holds 0 does not say "no difference". It
# says the difference is smaller than this study can see. How small: with per-seed SD $s$, $k$ seeds give
# a half-width of $t_{0.975,k-1}\,s/\sqrt k$, and a true difference is found (the interval excludes 0)
# about 4 times in 5 once it is about $(t_{0.975,k-1} + 0.84)\,s/\sqrt k$ (0.84: the normal 80% point).
# The package prints both (`resolve_lines`); the cell adds a class of 40 at the same spread.

# %%
from minipods.analysis.summary import Z80, resolve_lines, time_averaged

pts = cls_study[cls["seeds"][0]][GRPO]  # one seed's GRPO evaluations, by hand: trapezoids from 0 s to the budget
ts = [0.0] + [q.seconds for q in pts if 0 < q.seconds < CLS_BUDGET] + [CLS_BUDGET]
ys = np.interp(ts, [q.seconds for q in pts], [q.accuracy for q in pts])  # past the last evaluation: interpolated, or held
by_hand = float(np.sum(np.diff(ts) * (ys[1:] + ys[:-1]) / 2) / CLS_BUDGET)
print(f"seed {cls['seeds'][0]}, GRPO: time-averaged accuracy {100 * by_hand:.1f}% over {CLS_BUDGET:.0f} s "
      f"(evaluations {', '.join(f'{100 * q.accuracy:.0f}% at {q.seconds:.0f} s' for q in pts)})")
assert abs(by_hand - time_averaged(pts, CLS_BUDGET)) < 1e-9  # the package's statistic, by hand
prim = cls["averaged_versus"][GRPO]["seeds"]  # time-averaged accuracy, PODS minus GRPO, over seeds
print(f"primary (fixed before the seeds ran), time-averaged accuracy over {CLS_BUDGET:.0f} s, PODS minus GRPO: "
      f"{100 * prim['mean']:+.1f} points [{100 * prim['lo']:+.1f}, {100 * prim['hi']:+.1f}] over {prim['k']} seeds, "
      f"sign-flip p {prim['p']:.2f}")
print(f"per-seed SD: final accuracy {100 * m_['sd']:.1f} points, time-averaged {100 * prim['sd']:.1f} points")
cls_reading = ("PODS learns faster here" if prim["lo"] > 0 else "PODS learns slower here" if prim["hi"] < 0
               else "not resolved (the interval holds 0)")
print(f"the plan's reading: {cls_reading}\n")
assert cls_reading.startswith("not resolved")  # the reading below
print("\n".join(resolve_lines(cls)))
for k_ in (k, 40):  # the same spread, more students
    se = prim["sd"] / math.sqrt(k_)
    print(f"{k_} seeds at this SD ({100 * prim['sd']:.1f} points): ±{100 * t975(k_ - 1) * se:.1f} points; a true "
          f"difference of ~{100 * (t975(k_ - 1) + Z80) * se:.1f} points found 4 times in 5")
chi = np.random.default_rng(0).chisquare(k - 1, 200_000)  # an SD of k normal values: sd² (k - 1) / chi-square(k - 1)
sd_lo, sd_hi = (prim["sd"] * math.sqrt((k - 1) / np.quantile(chi, q)) for q in (0.975, 0.025))
print(f"the SD is itself measured on {k} seeds: 95% interval about [{100 * sd_lo:.1f}, {100 * sd_hi:.1f}] points, so 40 "
      f"seeds would give ±{100 * t975(39) * sd_lo / math.sqrt(40):.1f} to ±{100 * t975(39) * sd_hi / math.sqrt(40):.1f} points")

# %% [markdown]
# **Reading it.** The plan's reading is "not resolved" (asserted): over 600 s, max-variance PODS was not
# shown to learn faster or slower than GRPO at this scale. It is a bounded "not resolved": a true
# difference under about 8 points of time-averaged accuracy would be missed more often than 1 time in 5
# by 12 seeds, and 40 students at the same spread would roughly halve that (printed). The SD itself is
# measured on 12 seeds, so the spread could well be smaller or larger: the last line gives the range of
# what 40 seeds would resolve that this uncertainty allows.
#
# **The paper's own metric: time to GRPO's level.** The paper reads how long each arm takes to reach
# vanilla GRPO's peak accuracy. Per seed, the target here is GRPO's plateau, the mean of its last two
# evaluations, not its peak (the maximum of noisy evaluations is biased up; notebook 06 section 2 reads
# both); an arm reaches it at its first evaluation within one evaluation's standard error below it. The speed-up is GRPO's time over PODS's; a
# seed whose PODS never gets there is **censored** (counted at its run's end, so the speed-up is an upper
# bound, printed "≤"); the speed-up over seeds is the geometric mean of the per-seed ratios with the
# t-interval of their logs (`minipods.analysis.summary.time_to_target`). The laptop study ran the paper's
# design scaled down (one prompt a step, $n/m = 4$: $16 \to 4$, the authors' loss, every kept row paid) for 900 s per arm on 10
# seeds; the cell reads both studies' speed-ups with the same statistics as above.

# %%
lap_study, lap, LAP_BUDGET, lap_dirs = read_reference("laptop10")
for name, s in (("class study", cls), ("laptop study", lap)):
    t_ = s["time"]["arms"][PODS]
    sp = t_["speedup"]
    fv = s["versus"][GRPO]["seeds"]
    print(f"{name} ({len(s['seeds'])} seeds): PODS reached GRPO's level {'≤' if t_['censored'] else ''}{sp['ratio']:.2f}x "
          f"as fast [{sp['lo']:.2f}, {sp['hi']:.2f}] ({sp['k']} of {len(s['seeds'])} seeds had a target"
          + ("" if sp["k"] == len(s["seeds"]) else f": GRPO's step-0 evaluation met it on the other"
             f"{'s' if len(s['seeds']) - sp['k'] > 1 else ''}")
          + f"; {t_['censored']} censored); "
          f"final accuracy, PODS minus GRPO, {100 * fv['mean']:+.1f} [{100 * fv['lo']:+.1f}, {100 * fv['hi']:+.1f}], "
          f"sign-flip p {fv['p']:.2f}")
    assert sp["hi"] < 1.7 and fv["lo"] <= 0 <= fv["hi"]  # the reading below
print("\n".join(resolve_lines(lap)))

# %% [markdown]
# **Reading it.** In both studies the paper's 1.7× lies above the speed-up's whole interval, and neither
# final-accuracy interval excludes 0 (asserted). The honest summary at this scale: no speed-up of the
# paper's size and no accuracy difference that these seeds could resolve. Their resolve lines say how
# small "could not resolve" is: about 8 points of time-averaged accuracy in both studies (for the laptop
# study a statistic chosen after its seeds were seen, post hoc: docs/results.md), 10 to 18 points
# of final accuracy, and a speed-up under about 1.9×; a real but smaller effect these studies would
# likely miss. Section 6 asks where a speed-up would have to come from: how much more a PODS step must be worth
# than it costs.

# %% [markdown]
# ## 5. A live run: watch GRPO learn
#
# Now GRPO trains here, on one seed, as one student's GRPO arm of the class study does: the `class`
# preset (SmolLM2-135M with LoRA, synthetic word problems, one prompt a step, $n = m = 4$, lr
# $2 \cdot 10^{-4}$, every kept row paid in the update, as the paper's), evaluated greedily on the same
# 64 held-out questions. Two things differ from the study: the run is counted in **steps**, not seconds
# (40 steps, part of a study run's 600 s; the next cells print how long they take here), so on one machine
# and thread count it repeats bit for bit whatever else the machine is doing; and it is evaluated every 20 steps instead of
# every 150 s. As a command:
#
# `python -m minipods.compare --preset class --arms grpo --max-steps 40 --budget-s 0 --eval-every-s 0 --eval-every 20 --seed 0`
#
# The cell first empties its run folder (`runs/nb05`): `compare` would otherwise skip an arm it finds
# finished there, and this page must show its own training. The line on stderr is the package's notice that
# the task is the synthetic one, not GSM8K (as the class study's was).

# %%
import shutil

folder = Path("runs/nb05_small" if SMALL else "runs/nb05")
shutil.rmtree(folder, ignore_errors=True)  # an empty folder: every run of this notebook trains again
SHARED = dict(budget_s=0.0, eval_every_s=0.0, seed=0, progress=False)  # counted in steps; section 6 reuses it
t_compare = time.perf_counter()
if SMALL:  # the tiny random model: mechanics only, in seconds
    TINY = dict(n=4, m=2, max_new_tokens=8, max_prompt_tokens=64, eval_max_new_tokens=8, eval_limit=4)
    out = compare.run_comparison(folder, arms=(GRPO,), preset="class", log=print, max_steps=3, eval_every=1,
                                 model_factory=lambda cfg: tiny_policy(seed=0), device=DEVICE, **TINY, **SHARED)
else:
    out = compare.run_comparison(folder, arms=(GRPO,), preset="class", log=print, max_steps=40, eval_every=20,
                                 device=DEVICE, **SHARED)
T_COMPARE = time.perf_counter() - t_compare  # training and evaluations

# %% [markdown]
# The cell below reads the run's `metrics.jsonl` (one row per step, and a row per evaluation) and draws
# accuracy against training seconds (evaluation time excluded, as the paper plots it) beside the mean
# reward and completion length of each step's rollouts. Then it reads the first and last evaluations
# question by question (each evaluation writes its per-question file): which questions went from wrong
# to right, and back.

# %%
import matplotlib.pyplot as plt

run = out / GRPO
evals = [r for r in results.read_rows(run) if r.get("eval_accuracy") is not None]
rows = {GRPO: results.training_rows(results.read_rows(run))}
print("GRPO: " + " -> ".join(f"step {r['step']} ({r['elapsed_s']:.0f} s): {round(r['eval_accuracy'] * r['eval_n'])}"
                             f"/{r['eval_n']}" for r in evals))
fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 3.4))
ax1.plot([r["elapsed_s"] for r in evals], [100 * r["eval_accuracy"] for r in evals], "o-")
ax1.set(xlabel="training seconds", ylabel="test accuracy (%)", title=f"GRPO: accuracy on {evals[0]['eval_n']} held-out questions")
st = [r["step"] for r in rows[GRPO]]
ax2.plot(st, [r["reward_mean"] for r in rows[GRPO]], ".-", label="mean reward")
ax2.set(xlabel="step", ylabel="mean reward of the step's rollouts", title="training")
ax3 = ax2.twinx()
ax3.plot(st, [r["completion_len_mean"] for r in rows[GRPO]], "x:", color="gray", label="completion tokens")
ax3.set_ylabel("mean completion tokens"); ax2.legend(loc="upper left"); ax3.legend(loc="upper right")
plt.tight_layout(); plt.show()

first, last = evals[0], evals[-1]
q0, q1 = ({q["index"]: int(q["correct"]) for q in results.read_eval(run, r["step"])} for r in (first, last))
up, down = sum(q1[i] > q0[i] for i in q0), sum(q1[i] < q0[i] for i in q0)
print(f"GRPO, step {first['step']} -> {last['step']}: {100 * first['eval_accuracy']:.1f}% -> {100 * last['eval_accuracy']:.1f}% "
      f"({up} questions went wrong -> right, {down} right -> wrong)")
if not SMALL:
    assert last["eval_accuracy"] > first["eval_accuracy"], "the text says GRPO's accuracy rises in this run"

# %% [markdown]
# **Reading it.** GRPO's accuracy rises from its untrained start (asserted; in SMALL mode the tiny random
# model only exercises the machinery). Is seed 0 lucky? This run is the first 40 steps of the class
# study's seed-0 GRPO arm (the same preset and seed), and the study ran that arm on 12 seeds: the cell
# reads each seed's GRPO evaluations from the study (section 1's reader) at step 0 and at the evaluation
# nearest step 40, and prints seed 0's first evaluations beside this page's, and at how many of this
# page's steps the training rows (mean reward, kept rollouts, completion length) repeat the study's seed-0
# rows. The study ran on an AMD EPYC Zen 3 with 2 threads; this page on the machine its opening card names
# ("cpu family 23 model 1" is a first-generation EPYC, Zen 1). Another CPU may add floats in another order:
# expect the same distribution there, if not always the same digits (the count below says how many of
# these rows repeated anyway). (Run and evaluations are this one seed's: the "95% CI" in the run's log above is an interval
# over its 64 questions, not over seeds.)

# %%
near = {s_: min(cls_study[s_][GRPO], key=lambda q: abs(q.step - 40)) for s_ in cls["seeds"]}  # the study's grid: ~150 s
print("seed | GRPO, correct of 64: step 0 -> the evaluation nearest step 40 (study)")
for s_, q in near.items():
    g0 = cls_study[s_][GRPO][0]
    print(f"{s_:4d} | {round(g0.accuracy * g0.n):2d} -> {round(q.accuracy * q.n):2d} at step {q.step} "
          f"({100 * (q.accuracy - g0.accuracy):+.1f} points)")
study_rows = {r["step"]: r for r in results.training_rows(results.read_rows(cls_dirs[0][GRPO]))}
same = sum(all(r[k] == study_rows.get(r["step"], {}).get(k) for k in ("reward_mean", "kept_idx", "completion_len_mean"))
           for r in rows[GRPO])
print(f"this page's training rows that repeat the study's seed-0 rows: {same} of {len(rows[GRPO])} steps")
gains = {s_: q.accuracy - cls_study[s_][GRPO][0].accuracy for s_, q in near.items()}
print(f"rose on {sum(g_ > 0 for g_ in gains.values())} of {len(gains)} seeds; not on seeds "
      f"{', '.join(str(s_) for s_, g_ in gains.items() if g_ <= 0)}, whose step-0 accuracy was the study's highest; "
      f"by its last evaluation (600 s) GRPO rose on {sum(cls_study[s_][GRPO][-1].accuracy > cls_study[s_][GRPO][0].accuracy for s_ in gains)}")
print("seed 0, the study: " + ", ".join(f"step {q.step} {round(q.accuracy * q.n)}/{q.n}" for q in cls_study[0][GRPO][:3])
      + " | this page: " + ", ".join(f"step {r['step']} {round(r['eval_accuracy'] * r['eval_n'])}/{r['eval_n']}" for r in evals))
non = [s_ for s_, g_ in gains.items() if g_ <= 0]
highest = sorted(gains, key=lambda s_: -cls_study[s_][GRPO][0].accuracy)[:len(non)]  # the highest step-0 accuracies
assert len(non) <= 2 and set(non) == set(highest) and gains[0] > 0.15  # the reading below

# %% [markdown]
# **What one seed can show:** that training moves this model's answers, and in which direction. By
# about 40 steps GRPO had risen on 10 of the study's 12 seeds and on seed 0 by more than 15 points
# (asserted), so the rise on this page is not luck; on two seeds that started high it had not yet risen
# at 40 steps, and one seed's run could have been one of them. **What it cannot show:** which method
# trains better. A PODS run beside it on the same seed would give one paired difference, one draw from
# section 1's spread, where single seeds ranged from −14 to +17 points. Ranking the arms needs the
# studies of sections 1-4; section 6 uses this run for what one run does measure well: what its steps
# cost.

# %% [markdown]
# ## 6. What a step costs, here and on the paper's L40S
#
# Per step, GRPO$(m, m)$ generates $P\,m$ rollouts ($P$ prompts) and updates on them; PODS$(n \to m)$
# generates $P\,n$ and updates on $P\,m$. If one PODS step is worth `gain` GRPO steps (GRPO's steps to a
# target over PODS's steps to it), PODS reaches the target sooner in wall-clock time **iff**
#
# $$\text{gain} \;>\; \frac{T_\text{PODS}}{T_\text{GRPO}} \quad(\text{the break-even gain}).$$
#
# **The paper's L40S.** The paper gives two step times (Sec. 5): 7.5 s per GRPO step ($n = m = 16$) and
# 10.1 s per PODS step ($64 \to 16$), one prompt a step as in the authors' run (a per-device batch of
# 1). With rollout time linear in the rollouts, their difference prices each extra rollout, and for any
# $n$ at $m = 16$ the break-even gain is the straight line through $(1, 1)$ and $(4, 10.1/7.5)$:
# $T_\text{PODS}(n)/T_\text{GRPO} = 1 + (n/m - 1)\,(10.1 - 7.5)/(7.5 \cdot 3)$. A second reading fits a
# plane $T = c + b_n n + b_m m$ to the step counts of all 80 released runs of the max-variance GSM8K
# settings (`costmodel.paper_l40s_model()`, notebook 06).
#
# **This machine, the same way.** Section 5's GRPO run and a short PODS run ($16 \to 4$, max-variance)
# from the same start give two step times here: PODS trains 4 steps on the same seed and the same
# prompts as GRPO's first 4, without evaluations, and each arm's step time is the mean over those 4
# steps. Read as the paper's are, the two step times make a cost model
# (`minipods.measure.costmodel.CostModel`) that prices any $n$ at this $P$ and $m$ and agrees with the
# arms by construction (asserted). Why not time the phases separately, on the untrained model? Because
# a step's cost depends on what the arm generates: its completions' lengths (printed) change as it
# learns and differ between the arms, and an update that skips silent rows pays for fewer rows than one
# that pays every kept row. A model timed apart from the runs prices other work than the runs did and
# can miss their ratio; a cost model is only as good as its match to the runs it prices, so
# here it is read off them.

# %%
from minipods.measure import costmodel
from minipods.analysis import paper_runs

from minipods import train as train_mod

K = 2 if SMALL else 4  # PODS's steps: the cost of a step, not learning
pods_cfg = compare.arm_configs((PODS,), "class", folder, max_steps=K, eval_every=0, device=DEVICE,
                               **(TINY if SMALL else {}), **SHARED)[PODS]
t_pods = time.perf_counter()
train_mod.train(pods_cfg, *(tiny_policy(seed=0) if SMALL else (None, None)))  # a fresh model, as GRPO's arm had
T_PODS = time.perf_counter() - t_pods
rows[PODS] = results.training_rows(results.read_rows(pods_cfg.output_dir))
cfgs = {GRPO: results.read_config(run), PODS: results.read_config(pods_cfg.output_dir)}
assert all(c_["update_pricing"] == "every_row" for c_ in cfgs.values())  # both arms paid every kept row
assert [r["step"] for r in rows[PODS]] == list(range(1, K + 1))
P5, n5, m5 = cfgs[PODS]["prompts_per_step"], cfgs[PODS]["n"], cfgs[PODS]["m"]
c = {a: {k_: float(np.mean([r[k_] for r in rows[a][:K]])) for k_ in ("rollout_s", "update_s", "step_s", "completion_len_mean")}
     for a in (GRPO, PODS)}  # the first K steps of each: the same prompts, from the same model
print(f"mean over steps 1-{K} (P={P5})  rollout s | update s | step s | completion tokens")
for a in (GRPO, PODS):
    print(f"  {a:18s} n={cfgs[a]['n']:2d} | {c[a]['rollout_s']:8.2f} | {c[a]['update_s']:8.2f} | {c[a]['step_s']:6.2f} | "
          f"{c[a]['completion_len_mean']:6.1f}")
R_run = c[PODS]["step_s"] / c[GRPO]["step_s"]
b_r = (c[PODS]["step_s"] - c[GRPO]["step_s"]) / (P5 * (n5 - m5))  # s per extra rollout: the two step times' reading
fixed = c[GRPO]["step_s"] - c[GRPO]["rollout_s"] - c[GRPO]["update_s"]  # a step's seconds in neither phase
cm_here = costmodel.CostModel(costmodel.Line(c[GRPO]["rollout_s"] - b_r * P5 * m5, b_r),
                              costmodel.Line(c[GRPO]["update_s"], 0.0), fixed)  # both arms update on P m rows
assert abs(cm_here.break_even(n5, m5, prompts=P5)["break_even_gain"] - R_run) < 1e-9  # the model meets the arms
print(f"a PODS step cost {R_run:.2f} GRPO steps here (n/m = {n5 / m5:g}): of its extra "
      f"{c[PODS]['step_s'] - c[GRPO]['step_s']:.2f} s, rollouts {c[PODS]['rollout_s'] - c[GRPO]['rollout_s']:+.2f} s, "
      f"update {c[PODS]['update_s'] - c[GRPO]['update_s']:+.2f} s (the same P m rows, other lengths)")

ratios = np.arange(1, 9)
paper = costmodel.paper_l40s()
b_paper = (paper["pods_s"] - paper["grpo_s"]) / (paper["n"] - paper["m"])
curves = {f"here (P={P5}, m={m5})": [cm_here.break_even(int(r * m5), m5, prompts=P5)["break_even_gain"] for r in ratios],
          "L40S: two step times": [1 + b_paper * (r - 1) * paper["m"] / paper["grpo_s"] for r in ratios],
          "L40S: plane fitted to 80 runs": [costmodel.paper_l40s_model().break_even(int(r * 16), 16)["break_even_gain"]
                                            for r in ratios]}
assert abs(curves["L40S: two step times"][3] - paper["pods_s"] / paper["grpo_s"]) < 1e-9  # through (4, 10.1/7.5)
print("break-even gain at n/m = 4: " + "; ".join(f"{k_} {v[3]:.2f}" for k_, v in curves.items()))
slopes = [v[1] - v[0] for v in curves.values()]
print("extra cost of each further multiple of m, as a share of a GRPO step: "
      + "; ".join(f"{k_} {v[1] - v[0]:.3f}" for k_, v in curves.items())
      + f" -> here {'steeper than' if slopes[0] > max(slopes[1:]) else 'flatter than' if slopes[0] < min(slopes[1:]) else 'between'} the L40S's")
for (k_, v), style in zip(curves.items(), ("o-", "s--", "^:")):
    plt.plot(ratios, v, style, label=k_)
plt.plot([n5 / m5], [R_run], "D", color="black", label="the two runs here")
plt.xlabel("n / m"); plt.ylabel("break-even gain  T_PODS / T_GRPO"); plt.title("PODS pays above its curve")
plt.grid(alpha=0.3); plt.legend(fontsize=8); plt.show()

# %% [markdown]
# How to read it: each curve is the number of GRPO steps one PODS step must be worth to pay for itself;
# their slopes, the extra cost of each further multiple of $m$, are the whole comparison (printed, with
# the verdict). A steeper curve here than on the L40S means extra rollouts cost a larger share of a step
# on this CPU, a flatter one a smaller share.
# The paper reports PODS reaching GRPO's peak at least 1.7× sooner, and about 2× in its Fig. 1 (notebook 06
# reads 1.50-2.00× from the released runs, by target); at $n/m = 4$ a 2× implies each PODS step there was
# worth about $2 \times 10.1/7.5 \approx 2.7$ GRPO steps (1.7× implies about 2.3), well above the L40S's
# break-even of about 1.35.
#
# **Measured: what a PODS step was worth in the laptop study.** Section 4's laptop study ran the paper's
# design to GRPO's level on 10 seeds, so it measures both sides of the inequality: the worth, GRPO's
# steps to the target over PODS's (each the mean over seeds, a seed that never reached it counted at its
# run's end, so PODS's steps are a lower bound and the worth an upper bound, "≤"), and the cost, PODS's
# mean seconds per step over GRPO's.

# %%
lt = lap["time"]["arms"]
steps = {a: lt[a]["restricted_step"]["mean"] for a in (GRPO, PODS)}
step_s = {a: np.mean([np.mean([r["step_s"] for r in results.training_rows(results.read_rows(lap_dirs[s_][a]))])
                      for s_ in lap["seeds"]]) for a in (GRPO, PODS)}  # mean over seeds of each run's mean step
cens = "≤" if lt[PODS]["censored"] else ""
worth, cost = steps[GRPO] / steps[PODS], step_s[PODS] / step_s[GRPO]
print(f"steps to GRPO's level: GRPO {steps[GRPO]:.1f}, PODS {'≥' if cens else ''}{steps[PODS]:.1f} -> a PODS step "
      f"was worth {cens}{worth:.2f} GRPO steps")
print(f"seconds per step: GRPO {step_s[GRPO]:.2f}, PODS {step_s[PODS]:.2f} -> it cost {cost:.2f}; PODS pays iff worth > "
      f"cost: {worth > cost}")
assert worth < cost  # the reading below
l40s_cost = paper["pods_s"] / paper["grpo_s"]
l40s_worth = costmodel.implied_gain(2.0, paper["pods_s"], paper["grpo_s"])  # what the paper's ~2x implies
print(f"the L40S: worth ~{l40s_worth:.2f} (implied by the ~2x), cost {l40s_cost:.2f}; the worths differ "
      f"{l40s_worth / worth:.1f}x, the costs {cost / l40s_cost:.2f}x")
assert l40s_worth / worth > cost / l40s_cost  # the reading below: the worth differs more than the cost

# %% [markdown]
# **Reading it.** At laptop scale a PODS step was worth at most what the cell prints (`≤`: an upper bound,
# since seeds that never reached the level count at their run's end), and less than it cost (asserted): the fewer steps did
# not pay for the dearer ones, which is why section 4 found no speed-up. (This cost is the whole laptop
# study's, on its machines; section 6's first cost came from a few steps of the untrained model on this
# CPU, so the two need not agree.) On the L40S the paper's steps were worth about 2.7 GRPO steps (implied by its ~2×) at a cost
# of about 1.35. What differs between the two is the worth far more than the cost, and the worth is
# what a larger model, a harder task and longer runs would have to supply.

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
# ## 7. Takeaways
#
# A comparison of two training methods has as many independent observations as it has training runs.
# Read it with the run as the unit: a paired difference per seed, their mean with a Student-t interval,
# the sign-flip p, and the size of difference the seeds' spread can resolve; a pooled interval over
# questions is about those questions only. At classroom scale, 12 and 10 seeds found no speed-up of the
# paper's size and no accuracy difference; a difference under about 8 points of time-averaged accuracy
# (the class study's primary; the laptop study's post hoc), or a speed-up under about 1.9×, they would miss
# more than 1 time in 5. One live run shows a model
# learning, and nothing about which arm is better. PODS pays only when a step is worth more GRPO steps
# than it costs, and the worth is what this scale did not supply. The card below is assembled from this
# notebook's numbers.

# %%
card = f"""**On a card** (from this run, {'SMALL' if SMALL else 'full'} mode).

* The run is the unit: the class study's 12 seeds give PODS minus GRPO at the final evaluation \
{100 * m_['mean']:+.1f} points [{100 * m_['lo']:+.1f}, {100 * m_['hi']:+.1f}] (t 95% CI over seeds), sign-flip p {m_['p']:.2f}; \
single seeds range from {100 * diffs.min():+.1f} to {100 * diffs.max():+.1f}.
* Its primary, fixed before the seeds ran (time-averaged accuracy): {100 * prim['mean']:+.1f} points \
[{100 * prim['lo']:+.1f}, {100 * prim['hi']:+.1f}]: {cls_reading}; 40 seeds at the same spread: \
±{100 * t975(39) * prim['sd'] / math.sqrt(40):.1f} points.
* Time to GRPO's level, PODS's speed-up: class {'≤' if cls['time']['arms'][PODS]['censored'] else ''}\
{cls['time']['arms'][PODS]['speedup']['ratio']:.2f}x, laptop {cens}{lt[PODS]['speedup']['ratio']:.2f}x; the paper's 1.7x lies above both intervals.
* This notebook's run (one seed): GRPO {100 * first['eval_accuracy']:.1f}% -> {100 * last['eval_accuracy']:.1f}% \
in {last['step']} steps on {first['eval_n']} questions{': it shows learning' if last['eval_accuracy'] > first['eval_accuracy'] else ''}; one seed ranks nothing.
* A PODS step is worth its cost iff gain > T_PODS / T_GRPO: here {R_run:.2f} at n/m = {n5 / m5:g}\
{'' if n5 / m5 == 4 else f", {curves[next(iter(curves))][3]:.2f} at n/m = 4"}; the L40S {curves['L40S: two step times'][3]:.2f}. Laptop study: worth {cens}{worth:.2f}, cost {cost:.2f}."""
display(Markdown(card))

# %%
print(f"notebook ran in {time.perf_counter() - T0:.0f} s ({'SMALL' if SMALL else 'full'} mode); section 5's GRPO run "
      f"{T_COMPARE:.0f} s (training {rows[GRPO][-1]['elapsed_s']:.0f} s, the rest evaluations and loading), section 6's "
      f"PODS steps {T_PODS:.0f} s")
