# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 02 · Rewards: answer extraction, correctness, format, and zero-variance groups
#
# > * **You will learn:** (1) how a completion is graded: the lenient answer extractor and the format reward; (2) GRPO's advantage (sample std) and why a group of equal rewards teaches nothing; (3) how often a group of n is silent: p^n + (1 − p)^n.
# > * **Comes first:** 01.
# > * **Background:** mean and the sample standard deviation (n − 1 in the denominator); GRPO's group-relative advantage (Shao et al. 2024, *DeepSeekMath*, Sec. 4.1); the probability that n independent trials all agree, p^n + (1 − p)^n.
# > * **Time here** (written by `scripts/run_notebooks.py` from the run that made this page, 2026-12-05: AMD EPYC, cpu family 23 model 1, 2 threads): full mode 1 min 58 s (the last cell's 118 s), of it section 4 (rewards of real groups) 1 min 57 s.
# > * **You should see:** in section 5, the advantage of the right answer in rewards [1, 0, 0, 0]: 1.500, not np.std's 1.732.
#
# **Question.** How is a rollout scored, and when does a group of rollouts carry no learning signal?
#
# PODS trains with GRPO on **verifiable rewards**: a rule checks each rollout, with no learned reward
# model (Xu, Savani, Fang, Kolter, *Not All Rollouts are Useful: Down-Sampling Rollouts in LLM Reinforcement Learning*, TMLR 2026). `minipods.rewards` scores a completion as
#
# $$r = \underbrace{\mathbb 1[\text{extracted answer} = \text{gold}]}_{\text{correctness},\ 0\text{ or }1}
# \;+\; \underbrace{0.025 \times \#\{\text{well-placed tags}\}}_{\text{format},\ 0\ldots0.1}.$$
#
# **What matches the authors' reward and what differs** (docs/training.md, "`--preset paper`", the
# reward row). The same: a correctness term of 1.0 that dominates, graded leniently (the `<answer>`
# block or else the last number in the text), plus a small format bonus of 0.025 per tag. Different: the
# authors check correctness with the `math_verify` library (symbolic equivalence; minipods compares
# normalised numbers, enough for GSM8K's integer answers), and their format part adds a further 0.1 for a
# strict `<think>…</think><answer>…</answer>` layout (minus 0.01 per extra character) on top of 0.025 per
# tag, so their reward reaches 1.2 where minipods' reaches 1.1 (tags `<reasoning>`/`<answer>`). Since the down-sampling rule
# mostly separates correct from wrong answers, the correctness term, lenient in both, is what matters.
#
# This notebook: the GSM8K answer format, extracting the final number from real and adversarial
# completions, the format reward, the reward distribution of a group, and why a group whose rewards are
# all equal gives GRPO **no learning signal**.
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

DEVICE = "cpu"  # this notebook times a CPU: on a GPU runtime too, its models stay on the CPU
SMALL = os.environ.get("MINIPODS_NB_SMALL") == "1"  # tiny sizes (the test suite sets this)
warnings.filterwarnings("ignore", category=FutureWarning)
T0 = time.perf_counter()
torch.manual_seed(0)
print(f"{'SMALL' if SMALL else 'full'} mode | torch {torch.__version__} | {torch.get_num_threads()} CPU threads | "
      f"models on {DEVICE}" + (" (a GPU is present and left alone)" if torch.cuda.is_available() else ""))

# %% [markdown]
# ## 1. The GSM8K answer format
#
# A reference solution is worked text with calculator annotations `<<48/2=24>>` and a final line
# `#### 72`. `data.parse_gold` keeps what follows the last `####`, normalised by
# `rewards.normalize_number` (`$`, thousands commas and trailing zeros removed), so that `1,080`,
# `1080.00` and `$1080` all compare equal.

# %%
from minipods.data import load_task, parse_gold
from minipods.rewards import normalize_number

items, source = load_task("gsm8k", "train", limit=8)
print("data:", lessons.data_source_label(source), "\n")  # the env variable and folder name, not this machine's path
assert source.startswith("gsm8k") or not os.environ.get("MINIPODS_GSM8K_DIR"), "MINIPODS_GSM8K_DIR is set but unreadable"
print(items[0]["answer"])
print("\ngold:", items[0]["gold"])
assert all(parse_gold(it["answer"], "nb") == it["gold"] for it in items)
for raw, canon in [("1,080", "1080"), ("$5.50", "5.5"), ("-0", "0"), ("72.", "72"), ("007", "7")]:
    assert normalize_number(raw) == canon, raw
print({raw: normalize_number(raw) for raw in ["1,080", "$5.50", "-0", "72.", "007", "12 apples"]})

# %% [markdown]
# ## 2. Extracting the answer
#
# The system prompt asks for `<reasoning>…</reasoning><answer>…</answer>`. Small models rarely comply,
# so grading is lenient (as the authors' is; their parser is `math_verify`, see above): `extract_answer` tries, in order,
#
# 1. the **last complete** `<answer>…</answer>` block — the number in its `\boxed{}` if any, else its
#    last number;
# 2. the first number after the last `####` (GSM8K's own format);
# 3. the number in the last `\boxed{}`, else the **last number anywhere**.
#
# An unclosed `<answer>` (a generation cut at `max_new_tokens`) is not a block. The hard cases below
# are asserted, so a change in the package's grading fails this notebook.

# %%
from minipods.rewards import extract_answer

cases = [
    ("well formed",                 "<reasoning>48/2 = 24; 48 + 24 = 72</reasoning>\n<answer>\n72\n</answer>", "72"),
    ("units, $ and commas",         "<answer>$1,080.00</answer>", "1080"),
    ("words in the block",          "<answer>She sold 48 + 24 = 72 clips</answer>", "72"),
    ("boxed inside the block",      r"<answer>\boxed{72} (from 48 and 24)</answer>", "72"),
    ("two blocks: the last wins",   "<answer>70</answer> wait, no: <answer>72</answer>", "72"),
    ("negative decimal",            "<answer>-3.50</answer>", "-3.5"),
    ("GSM8K style ####",            "48 + 24 = 72\n#### 72\nThe answer is 7", "72"),
    ("empty block falls through",   "The total is 72.\n<answer></answer>", "72"),
    ("unclosed block (truncated)",  "<reasoning>48/2 = 24</reasoning><answer>7", "7"),
    ("boxed outside any block",     r"so the answer is \boxed{72}. Check: 3 + 4", "72"),
    ("no number at all",            "I do not know.", None),
]
for name, text, want in cases:
    got = extract_answer(text)
    print(f"{name:28s} -> {got!s:6s}   {text[:60]!r}")
    assert got == want, (name, got, want)

# %% [markdown]
# **Exercise 02.1 (implement).** Write the grader's extractor from the order given above. `NUMBER` finds a
# number as the package reads one and `normalize_number` gives its canonical string. The check compares
# with `minipods.rewards.extract_answer` on over a hundred generated completions (blocks, '####',
# `\boxed{}`, money, unclosed blocks, no number at all).

# %%
from exercises import check
import re
from minipods.rewards import normalize_number  # '$1,080.00' -> '1080'

NUMBER = re.compile(r"-?\$?(?:[0-9]{1,3}(?:,[0-9]{3})+|[0-9]+)(?:\.[0-9]+)?")  # one number

def extract(text):
    r"""The final answer as normalize_number's string, or None: (1) the last complete <answer>...</answer>
    block: the number in its \boxed{...} if any, else its last number; (2) else the first number after the
    last '####'; (3) else the number in the last \boxed{...}, else the last number anywhere."""
    raise NotImplementedError("02.1: your code here")

check("02.1", extract)

# %% [markdown]
# ## 3. The format reward
#
# Each tag of `<reasoning>`, `</reasoning>`, `<answer>`, `</answer>` earns 0.025 when it occurs
# **exactly once** and, after the first, the previous tag also occurs exactly once and comes before it.
# So order matters, and a duplicated or missing tag also costs the tag after it.

# %%
from minipods.rewards import format_reward, correctness_reward, total_reward

fmt_cases = [
    ("all four, in order",   "<reasoning>r</reasoning><answer>72</answer>", 0.1),
    ("no tags",              "72", 0.0),
    ("missing </reasoning>", "<reasoning>r <answer>72</answer>", 0.05),
    ("answer before reasoning", "<answer>72</answer><reasoning>r</reasoning>", 0.075),
    ("<answer> twice",       "<reasoning>r</reasoning><answer>7<answer>72</answer>", 0.05),
]
for name, text, want in fmt_cases:
    got = format_reward(text)
    print(f"{name:26s} format {got:.3f}   correct(72) {correctness_reward(text, '72'):.0f}   total {total_reward(text, '72'):.3f}")
    assert abs(got - want) < 1e-12, (name, got)

# %% [markdown]
# **Exercise 02.2 (implement).** Write the format reward from the rule above: 0.025 per tag that occurs
# exactly once and, after the first tag, whose previous tag also occurs exactly once and comes before it.
# The check compares with `minipods.rewards.format_reward` on generated texts whose tags are deleted,
# duplicated, swapped and shuffled.

# %%
from exercises import check
TAGS = ("<reasoning>", "</reasoning>", "<answer>", "</answer>")

def fmt_reward(text):
    """0.025 for each tag of TAGS that occurs exactly once and, after the first, whose previous tag also
    occurs exactly once and comes before it: 0 .. 0.1."""
    raise NotImplementedError("02.2: your code here")

check("02.2", fmt_reward)

# %% [markdown]
# **Exercise 02.3 (observe).** Section 3 deleted `</reasoning>`. Edit `edited` below: delete the *opening*
# `<reasoning>` from the well-formed completion instead (`TEXT.replace("<reasoning>", "")`, as a model that
# starts reasoning without the tag writes) and rerun. Answer: its format reward now? Then try other edits
# (`</answer>` deleted, a second `<answer>`, the blocks swapped): which tags does each one cost?

# %%
from exercises import check
from minipods.rewards import format_reward

TEXT = "<reasoning>48/2 = 24; 48 + 24 = 72</reasoning>\n<answer>72</answer>"
edited = TEXT  # change me
print(f"format reward {format_reward(edited):.3f} for {edited!r}")
reward_without_opening_reasoning = None  # your answer: the format reward once <reasoning> is deleted

check("02.3", reward_without_opening_reasoning)

# %% [markdown]
# ## 4. Rewards of real groups
#
# Now the real thing: $n$ rollouts of SmolLM2-135M-Instruct for a few GSM8K questions, scored with
# `score_completions`, and the same for the package's synthetic word problems (`data.synthetic_problems`,
# one arithmetic step each; not part of the paper).
#
# **What to expect: almost nothing but zeros.** An untrained 135M model solves very few of these
# problems (GSM8K hardly any) and never writes the format tags, so nearly every rollout's reward is 0 and
# nearly every group has zero variance. The figure cannot show rewards that vary within a group when the
# model does not produce them: it shows that, for a model this weak, the silent group is the common case,
# not the exception, which is exactly why section 5 matters and why PODS generates many rollouts per
# prompt. (Rewards start to vary once training raises the pass rate: the end of this section reads the
# groups of real training runs; notebook 03 draws 16 rollouts per question to find a few mixed groups.) The
# cell counts, for this run, the rollouts that were right and those that earned any format reward.
#
# The rollouts come from `minipods.fast.rollouts`, the package's **fast engine**: the contract of the
# plain `minipods.rollouts.generate_rollouts` (same arguments, same `Rollouts` out, the same distribution
# sampled) with less work — each distinct prompt is prefilled once and its KV cache copied to its $n$
# rows, the cache is written in place rather than concatenated each step, sampling draws one uniform per
# row and step (inverse CDF), and on CPU the LoRA adapter is folded into packed weights. `tests/test_fast.py`
# holds the two engines equal: greedy completions token for token, sampled first tokens at softmax(logits / T)'s
# frequencies.

# %%
from minipods.model import load_policy
from minipods.data import build_prompt, synthetic_problems
from minipods.fast.rollouts import generate_rollouts  # the fast engine (above): plain's contract, less time
from minipods.rewards import score_completions
from minipods.twins.tiny import tiny_policy

model, tok = tiny_policy() if SMALL else load_policy(device=DEVICE)  # SMALL: the package's tiny random test model
P, n, max_new = (2, 4, 48) if SMALL else (4, 8, 192)

def score_groups(task_items, seed=0):
    torch.manual_seed(seed)
    prompts = [build_prompt(tok, it["question"]) for it in task_items]
    ro = generate_rollouts(model, tok, prompts, n, max_new_tokens=max_new, temperature=0.9, batch_size=32)
    golds = [it["gold"] for it in task_items for _ in range(n)]  # each gold once per rollout of its group
    return ro, score_completions(ro.texts, golds)  # dict of lists: reward, correct, format

groups = {"GSM8K": items[:P], "synthetic": synthetic_problems(P, seed=0)}
t = time.perf_counter()
scored = {name: score_groups(its) for name, its in groups.items()}  # rows grouped: question 0's n first
T_ROLLOUTS = time.perf_counter() - t  # the last cell prints its share of the notebook's time

# %%
ro, sc = scored["GSM8K"]  # the first rollouts of GSM8K question 0, as the grader saw them
for i in range(min(n, 3)):
    t = ro.texts[i]  # a long one: its start and its end (where the last number, often the one extracted, is)
    text = t if len(t) <= 420 else f"{t[:300]} [...] {t[-120:]}"
    print(f"--- GSM8K q0 rollout {i}: extracted {extract_answer(t)!r}, gold {items[0]['gold']!r}, "
          f"reward {sc['reward'][i]:.3f}\n{text}")

# %%
rewards = {name: torch.tensor(sc_["reward"]).view(P, n) for name, (_, sc_) in scored.items()}  # (P, n)
silent = {name: int((r.max(1).values == r.min(1).values).sum()) for name, r in rewards.items()}
fires = {name: (sum(c > 0 for c in sc_["correct"]), sum(f > 0 for f in sc_["format"]))
         for name, (_, sc_) in scored.items()}  # rollouts right, rollouts with any format reward
for name, r in rewards.items():
    print(f"{name:9s} rewards per group:", [[round(v, 3) for v in row] for row in r.tolist()])
lessons.plot_group_rewards(rewards, silent, fires)
for name, (k_right, k_fmt) in fires.items():
    print(f"{name:9s}: {k_right}/{P * n} rollouts correct, {k_fmt}/{P * n} earned a format reward, "
          f"{silent[name]}/{P} groups with zero reward variance"
          + (" -- the format term never fired here; section 3 shows it on written completions" if k_fmt == 0 else ""))
silent_all = sum(silent.values())
print(f"silent groups, both tasks: {silent_all} of {2 * P}; every reward 0 in {sum(int((r == 0).all(1).sum()) for r in rewards.values())} of them")
if not SMALL:  # the prose above, on SmolLM2 (the tiny random model of SMALL mode solves nothing either)
    assert silent_all >= P, "the prose says most groups are silent"
    assert int((rewards["GSM8K"].max(1).values < 1).sum()) > P // 2, "the prose says GSM8K is hardly ever solved"
    assert sum(k for k, _ in fires.values()) <= P * n // 4, "the prose says the model is right on very few rollouts"

# %% [markdown]
# **Mixed groups, from real training runs.** The groups above come from the untrained model. The class
# study (`studies/class12`, 12 seeds, read in notebook 05) trained the same model with GRPO on the package's
# synthetic word problems (the `class` preset's task, not GSM8K: above, GSM8K is almost never solved), one
# question and $n = 4$ rollouts a step, and each step's row of `metrics.jsonl` records the share of its
# rollouts that were right (`correct_frac`). With one question a step that share *is* the group: $k$ right
# of 4 means rewards $k$ ones and $4-k$ zeros (plus format bonuses, which these runs hardly ever earned).
# The figure counts, per seed, the steps whose group had 0, 1, 2, 3 or 4 right answers: the middle three
# are **mixed groups**, the only ones that move GRPO; 0 and 4 are silent.

# %%
from collections import Counter
from minipods.analysis import results

study = Path(minipods.__file__).resolve().parent.parent / "studies" / "class12"
meta = results.read_json(study / "comparison.json")
runs = {seed: arms["grpo"] for seed, arms in results.seed_dirs(study, meta).items()}  # seed -> GRPO run folder
cfg = results.read_config(runs[0])
assert cfg["prompts_per_step"] == 1 and cfg["n"] == 4, "one group a step: correct_frac * n is the group's count"
steps = {seed: results.training_rows(results.read_rows(run)) for seed, run in runs.items()}  # one row a step
right = {seed: [round(r["correct_frac"] * cfg["n"]) for r in rs] for seed, rs in steps.items()}  # right answers of 4
bonus = sum(r["format_reward_mean"] > 0 for rs in steps.values() for r in rs)  # steps where a format bonus was earned
print(f"steps with any format bonus: {bonus} of {sum(map(len, steps.values()))} (elsewhere rewards are the right answers)")
counts = {seed: Counter(ks) for seed, ks in right.items()}
lessons.plot_right_of_n(counts, cfg["n"])
mixed = {seed: sum(c[k] for k in range(1, cfg["n"])) / sum(c.values()) for seed, c in counts.items()}
print("share of steps with a mixed group, per seed:", " ".join(f"{mixed[s]:.2f}" for s in sorted(mixed)))
print(f"seeds: median {np.median(list(mixed.values())):.2f}, range {min(mixed.values()):.2f} to {max(mixed.values()):.2f}")
assert all(v > 0.2 for v in mixed.values()) and np.median(list(mixed.values())) < 0.5, "the reading below"
assert bonus <= 0.01 * sum(map(len, steps.values())), "the prose says these runs hardly ever earned a format bonus"

# %% [markdown]
# **Reading it.** Every training run met mixed groups (on each seed more than a fifth of its steps;
# asserted), so GRPO had signal to learn from; but even while training, on the median seed more than half
# of the steps drew a silent group (asserted): rollouts generated, a step's time spent, no gradient. That
# waste is what section 5 quantifies and what PODS's larger $n$ attacks.

# %% [markdown]
# ## 5. Zero-variance groups carry no GRPO signal
#
# GRPO replaces a value function by the group itself. For the rollouts $o_1,\dots,o_n$ of one prompt
# with rewards $r_1,\dots,r_n$,
#
# $$A_i = \frac{r_i - \bar r}{\operatorname{std}(r) + \varepsilon},\qquad
# \nabla_\theta \mathcal L = -\frac{1}{N}\sum_i A_i \sum_t \nabla_\theta \log \pi_\theta(o_{i,t}\mid q, o_{i,<t})$$
#
# (at the first gradient step, where the importance ratio is 1; $N$ = number of tokens). $\operatorname{std}$
# is the **sample** standard deviation (divisor $n-1$, `torch.std`'s default, as in TRL's
# GRPO code), not `np.std`'s population one (divisor $n$): for rewards $[1, 0, 0, 0]$ the correct
# rollout's advantage is $0.75/0.5 = 1.5$, not $0.75/0.433 = 1.73$ (checked below).
#
# If all $r_i$ are equal, every $A_i = 0$ and the prompt's **policy-gradient term is exactly zero** — its
# rollouts cost generation time and teach nothing. `grpo.group_advantages` returns exact zeros for such
# groups (never NaN). The cell below takes four groups of rewards (the last mixes the format bonuses of
# section 3: 0.025, 0.1 and a correct, well-formatted 1.1), then the loss's gradient with respect to
# every token's log-probability: zero for zero advantages, $-A_i/N$ otherwise.

# %%
from minipods.grpo import group_advantages, grpo_loss

for r in ([0., 0., 0., 0.], [1.1, 1.1, 1.1, 1.1], [0., 1., 0., 0.], [0., 0.025, 0.1, 1.1]):
    a = group_advantages(torch.tensor(r), torch.zeros(4, dtype=torch.long))  # one group: all rows group 0
    print(f"rewards {r} -> advantages {[round(v, 3) for v in a.tolist()]}")
    assert bool((a == 0).all()) == (len(set(r)) == 1)  # zero advantages exactly when all rewards are equal

logp = torch.randn(4, 6, requires_grad=True)  # 4 rollouts x 6 tokens of made-up log-probabilities
mask = torch.ones(4, 6)
for adv in (torch.zeros(4), torch.tensor([1.5, -0.5, -0.5, -0.5])):
    logp.grad = None
    loss, _ = grpo_loss(logp, logp.detach(), adv, mask, num_tokens=int(mask.sum()))
    loss.backward()
    assert torch.allclose(logp.grad, -adv[:, None].expand(4, 6) / mask.sum())
    print("advantages", adv.tolist(), "-> d loss / d logp (row means):", [round(v, 4) for v in logp.grad.mean(1).tolist()])

# %% [markdown]
# The sample standard deviation, checked on $[1, 0, 0, 0]$ against `np.std`'s population one:

# %%
a = group_advantages(torch.tensor([1.0, 0.0, 0.0, 0.0]), torch.zeros(4, dtype=torch.long))
a_pop = (1.0 - 0.25) / np.std([1.0, 0.0, 0.0, 0.0])
print(f"rewards [1, 0, 0, 0]: advantage of the 1 = {float(a[0]):.3f} (sample std, minipods) vs {a_pop:.3f} (np.std)")
assert abs(float(a[0]) - 1.5) < 1e-3 and abs(a_pop - 3 ** 0.5) < 1e-9

# %% [markdown]
# With a KL penalty ($\beta > 0$; minipods and the paper's Qwen runs use $\beta = 0$) the loss keeps a
# term $\beta \cdot \mathrm{KL}(\pi_\theta \,\|\, \pi_{\text{ref}})$ that has a gradient of its own once the
# policy has moved away from the reference: an all-equal group then only pulls the policy back towards
# the reference. Below: zero advantages, $\beta = 0.04$, and token log-probabilities that differ from the
# reference's by about 0.1:

# %%
logp.grad = None
ref = logp.detach() + 0.1 * torch.randn(4, 6)   # a policy that has moved away from the reference
loss, _ = grpo_loss(logp, logp.detach(), torch.zeros(4), mask, num_tokens=int(mask.sum()), beta=0.04, ref_logp=ref)
loss.backward()
print(f"zero advantages, beta = 0.04: |d loss / d logp| max = {float(logp.grad.abs().max()):.2e} (only the KL term)")
assert float(logp.grad.abs().max()) > 0

# %% [markdown]
# ### How often is a group uninformative?
#
# With binary correctness and a per-question success probability $p$, all $n$ rollouts agree with
# probability
#
# $$\Pr[\text{zero variance}] = p^n + (1-p)^n .$$
#
# For a weak model on hard questions ($p$ near 0) or a strong model on easy ones ($p$ near 1) this is
# close to 1 unless $n$ is large. **A larger $n$ makes a mixed group far more likely** — and generating
# is the phase that parallelises and needs little memory (the paper's premise; notebook 05 times both
# phases). PODS generates a large $n$ and then keeps the $m$ most informative rollouts for
# the expensive update (notebook 03). No down-sampling rule can rescue a group whose $n$ rewards are all
# equal.

# %%
def p_silent(p, n):
    return p ** n + (1 - p) ** n  # all n right or all n wrong

rng = np.random.default_rng(0)
for nn in (4, 16, 64):
    for p in (0.05, 0.5, 0.9):  # Monte-Carlo check of the formula: 20,000 simulated groups
        sims = rng.random((20000, nn)) < p
        mc = np.mean(sims.all(1) | (~sims).all(1))
        assert abs(mc - p_silent(p, nn)) < 0.02, (nn, p, mc)
lessons.plot_silent_probability(ns=(4, 16, 64))
for p in (0.02, 0.2):
    print(f"p = {p}: P[zero variance] = " + ", ".join(f"{p_silent(p, k):.3f} (n={k})" for k in (4, 16, 64)))

# %% [markdown]
# **Exercise 02.4 (predict, then run).** A group of eight rollouts, two right (reward 1) and six wrong (0).
# Predict the advantage GRPO gives each right one, then run the next cell.

# %%
from exercises import check
advantage_prediction = None  # your prediction: the advantage of a reward-1 rollout

# %%
import torch
from minipods.grpo import group_advantages

r = torch.tensor([1.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0])
print("advantages:", [round(a, 3) for a in group_advantages(r, torch.zeros(8, dtype=torch.long)).tolist()])

check("02.4", advantage_prediction)

# %% [markdown]
# **Exercise 02.5 (observe).** A prompt the model solves one time in five (p = 0.2). Change `n` in the cell
# and rerun until you find the smallest n at which a group of n rollouts is silent (all equal) less than 10%
# of the time.

# %%
from exercises import check
from minipods.analysis.gradients import predicted_silent_fraction

p, n = 0.2, 4  # change n
print(f"p = {p}, n = {n}: a group is silent with probability {predicted_silent_fraction(p, n):.3f}")
smallest_n = None  # your answer: the smallest n with a silent probability below 0.10

check("02.5", smallest_n)

# %% [markdown]
# **Takeaways.** Rewards are rule-based and lenient about where the number is; the format term is a
# small, graded bonus (section 3) — whether it fires on real rollouts depends on the model (section 4
# prints how often it did here). A group's rewards only matter through their differences: equal rewards
# mean zero advantages and no policy-gradient signal (with $\beta > 0$ only the KL pull remains).
# Generating more rollouts per prompt makes informative groups likelier — the inference-side half of PODS.
#
# **On a card.**
#
# * Reward = 1 if the extracted number equals the gold, + 0.025 per well-placed tag (max 0.1).
# * Only differences within a group matter: equal rewards → zero advantages → no policy-gradient signal (β > 0 leaves the KL pull).
# * Advantages divide by the sample std (n − 1): [1, 0, 0, 0] → 1.5 for the right answer, not np.std's 1.73.
# * P(group of n silent) = p^n + (1−p)^n: more rollouts per prompt, fewer silent groups.

# %%
total = time.perf_counter() - T0
n_rollouts = sum(len(ro_) for ro_, _ in scored.values())  # section 4's (exercise 02.5 reuses the name n)
print(f"notebook ran in {total:.0f} s ({'SMALL' if SMALL else 'full'} mode), {T_ROLLOUTS:.0f} s of it section 4's {n_rollouts} rollouts")
assert SMALL or T_ROLLOUTS > total / 2, "cell 0 says the rollouts take most of a full-mode run"
