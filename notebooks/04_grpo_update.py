# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 04 · The GRPO update: from kept rollouts to a LoRA step
#
# > * **You will learn:** (1) advantages on the kept subset and the clipped surrogate; (2) three ways to average over tokens (DeepSeekMath's GRPO, DAPO, Dr. GRPO) and whom each weighs; (3) why update time grows with m while activation memory is capped by the micro-batch; QLoRA and the planner.
# > * **Comes first:** 03.
# > * **Background:** PPO's probability ratio and clipped objective (Schulman et al. 2017, *Proximal Policy Optimization Algorithms*, Sec. 3); LoRA's low-rank adapters (Hu et al. 2021, *LoRA*, Sec. 4); gradient accumulation over micro-batches; 4-bit quantisation of weights (Dettmers et al. 2023, *QLoRA*, Sec. 2).
# > * **Time here** (written by `scripts/run_notebooks.py` from the run that made this page, 2026-12-05: AMD EPYC, cpu family 23 model 1, 2 threads): full mode 13 min 2 s (the last cell's 782 s), of it section 2 (the objective) 2 min 35 s, section 3 (one real update, and the KL through the disabled adapter) 1 min 17 s and section 4 (update time and memory grow with $m$) 7 min 48 s.
# > * **You should see:** in section 3, the KL to the reference 0 before the update and above 0 after, and the largest change of a LoRA B entry equal to the learning rate.
#
# **Question.** What does one GRPO update on the kept rollouts compute, and what does it cost in time and memory as m grows?
#
# The second, expensive phase of a PODS step (Xu, Savani, Fang, Kolter, *Not All Rollouts are Useful: Down-Sampling Rollouts in LLM Reinforcement Learning*, TMLR 2026): one GRPO update on the $m$ kept
# rollouts of each prompt. Step by step with `minipods.grpo`:
#
# 1. advantages on the kept subset;
# 2. the objective: per-token log-probabilities (chunked vs. naive), clipping, and three ways of averaging
#    over tokens (DeepSeekMath's GRPO, DAPO — minipods' default — and Dr. GRPO);
# 3. a real update that changes the LoRA weights, and the KL penalty through the *disabled adapter*;
# 4. how update time and memory grow with $m$;
# 5. what 4-bit quantisation + LoRA (QLoRA, the paper's setting) save;
# 6. will the paper's recipe fit my GPU? (`minipods.plan`, both phases priced apart);
#
# then the takeaways, and two appendices on library internals: (A) bitsandbytes' 4-bit layers on a CPU
# and their quantisation scales, (B) the shallow twins the planner's measured terms come from.
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
import matplotlib.pyplot as plt
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
# ## 1. Kept rollouts and their advantages
#
# We sample $n$ rollouts for $P$ prompts, score them, keep $m$ per prompt with max-variance
# (`train.select_kept`, which calls `downsample.downsample` per group and returns the kept rows of the
# batch), and compute GRPO advantages **on the kept subset** (the paper's choice; `adv_norm="all"`
# would standardise over all $n$):
#
# $$A_i = \frac{r_i - \operatorname{mean}_{j\in S}(r_j)}{\operatorname{std}_{j \in S}(r_j) + \varepsilon},\qquad i \in S .$$
#
# The std is the **sample** standard deviation (divisor $m-1$: `torch.std`'s default, as in DeepSeekMath's
# and TRL's code), not the population one (`np.std`, divisor $m$); the second cell below shows
# what that changes for the rewards $[1, 0, 0, 0]$.
#
# To make non-zero rewards likelier from a 135M model we use the package's synthetic word problems
# (SmolLM2 rarely solves GSM8K; notebook 02); the cell prints what this run's rollouts scored.

# %%
from minipods.model import load_policy, count_parameters
from minipods.data import build_prompt, synthetic_problems
from minipods.fast.rollouts import generate_rollouts  # minipods.fast: the plain engine's distribution, less time
from minipods.rewards import score_completions
from minipods.train import select_kept
from minipods.grpo import group_advantages
from minipods.twins.tiny import tiny_policy

# fp32 SmolLM2-135M-Instruct + LoRA r=64 on all linear layers (SMALL: the package's tiny random test model)
model, tok = tiny_policy() if SMALL else load_policy(device=DEVICE)
P, n, m, max_new = (2, 4, 2, 48) if SMALL else (2, 8, 4, 128)
items = synthetic_problems(P, seed=2)
torch.manual_seed(0)
ro = generate_rollouts(model, tok, [build_prompt(tok, it["question"]) for it in items], n,
                       max_new_tokens=max_new, batch_size=16)
rewards = torch.tensor(score_completions(ro.texts, [it["gold"] for it in items for _ in range(n)])["reward"])
flat = select_kept(rewards, n, m, "max_variance", seed=0, step=1)           # (P*m,) rows into ro, group-major
batch = ro.select(flat)                                                     # the kept rollouts only
adv = group_advantages(rewards[flat], batch.group)

# %%
for g in range(P):
    print(f"prompt {g}: rewards {[round(v, 3) for v in rewards[g * n:(g + 1) * n].tolist()]} -> keep {[i - g * n for i in flat if i // n == g]}")
print("kept advantages:", [round(a, 3) for a in adv.tolist()])
print("kept batch:", tuple(batch.prompt_ids.shape), "prompt,", tuple(batch.completion_ids.shape), "completion tokens")
for g in range(P):
    assert abs(float(adv[batch.group == g].sum())) < 1e-4  # advantages are centred within each kept group

r4 = torch.tensor([1.0, 0.0, 0.0, 0.0])
a4 = float(group_advantages(r4, torch.zeros(4, dtype=torch.long))[0])
a4_pop = float((r4[0] - r4.mean()) / np.std(r4.numpy()))
print(f"rewards [1, 0, 0, 0], advantage of the 1: sample std {float(r4.std()):.3f} -> A = {a4:.3f} (what minipods uses) | "
      f"population std (np.std) {np.std(r4.numpy()):.3f} -> A = {a4_pop:.3f}")
assert abs(a4 - 1.5) < 1e-3 and abs(a4_pop - 3 ** 0.5) < 1e-6  # 0.75 / 0.5 vs 0.75 / 0.433

# %% [markdown]
# ## 2. The objective
#
# With $\rho_{i,t} = \pi_\theta(o_{i,t}\mid q, o_{i,<t}) / \pi_{\text{old}}(o_{i,t}\mid q, o_{i,<t})$,
# `grpo.grpo_loss` minimises the clipped surrogate plus a KL penalty, averaged over all kept tokens:
#
# $$\mathcal L(\theta) = \frac{1}{\sum_{i\in S}|o_i|}\sum_{i\in S}\sum_{t=1}^{|o_i|}
# \Big[-\min\big(\rho_{i,t}A_i,\ \operatorname{clip}(\rho_{i,t}, 1-\epsilon, 1+\epsilon)\,A_i\big)
# + \beta\,\big(e^{d_{i,t}} - d_{i,t} - 1\big)\Big],\qquad d_{i,t} = \log\pi_{\text{ref}} - \log\pi_\theta .$$
#
# * **Token-level averaging** (as in DAPO; TRL's default `loss_type="dapo"`): divide by the total number
#   of kept tokens, so long answers are not down-weighted; summing micro-batch losses gives exactly the
#   full-batch loss. DeepSeekMath's original GRPO averages *per sequence* instead, and Dr. GRPO divides
#   by a constant; section 2b computes all three on our batch.
# * $e^{d}-d-1 \ge 0$ is the "k3" KL estimator; $\pi_{\text{ref}}$ is the same network with the LoRA
#   adapter switched off. The paper's Qwen runs use $\beta = 0$ (then no reference pass is made).
#
# ### Per-token log-probs without the (batch × length × vocab) tensor
#
# $\log \pi(y_t) = z_{y_t} - \operatorname{logsumexp}(z)$ with logits $z = W h_{t-1}$. The naive way
# materialises the full log-softmax, $B \times C \times V$ floats ($V = 49{,}152$ for SmolLM2, $151{,}936$
# for Qwen2.5). `token_logprobs` forms logits only for the real completion tokens, `chunk_tokens` at a
# time (default 512; we use 64 here so that even this small batch is split into several chunks), and
# recomputes each chunk in backward instead of storing it. Both must agree:

# %%
from minipods.grpo import token_logprobs, naive_token_logprobs

CHUNK = 64
args = (batch.prompt_ids, batch.prompt_mask, batch.completion_ids, batch.completion_mask)
with torch.no_grad():
    chunked = token_logprobs(model, *args, chunk_tokens=CHUNK)
    naive = naive_token_logprobs(model, *args)
diff = float((chunked - naive).abs().max())
print(f"max |chunked - naive| = {diff:.2e} over {int(batch.completion_mask.sum())} tokens")
assert diff < 1e-4

V = model.get_base_model().get_output_embeddings().weight.shape[0]
B, C = batch.completion_ids.shape
print(f"naive log-softmax: {B}x{C}x{V} floats = {B * C * V * 4 / 2**20:.0f} MiB here; "
      f"paper scale (16 x 512 x 151,936) = {16 * 512 * 151936 * 4 / 2**30:.1f} GiB")
n_tok = int(batch.completion_mask.sum())
print(f"chunked (chunk_tokens={CHUNK}): {-(-n_tok // CHUNK)} chunks of at most {CHUNK} x {V} floats = "
      f"{CHUNK * V * 4 / 2**20:.0f} MiB at a time (the default 512: {512 * V * 4 / 2**20:.0f} MiB)")

# %% [markdown]
# ### Clipping
#
# $\min(\rho A, \operatorname{clip}(\rho)A)$ stops the objective from rewarding moves of $\rho$
# beyond $1\pm\epsilon$ in the direction the advantage favours. The curve below is computed by
# `grpo_loss` itself (loss $= -$objective per token). With one gradient step per batch
# (`update_epochs=1`, the default) $\pi_{\text{old}} = \pi_\theta$, so $\rho = 1$, clipping is inactive,
# and the gradient is the plain policy gradient $-A_i/N$ per token (asserted).

# %%
from minipods.grpo import grpo_loss

rho = torch.linspace(0.5, 1.5, 101)
fig, ax = plt.subplots(figsize=(7, 3.2))
for A in (1.0, -1.0):
    obj = [-grpo_loss(torch.log(x).view(1, 1), torch.zeros(1, 1), torch.tensor([A]), torch.ones(1, 1), 1)[0].item()
           for x in rho]
    ax.plot(rho, obj, label=f"A = {A:+.0f}")
ax.axvspan(0.8, 1.2, color="grey", alpha=0.15, label=r"$1 \pm \epsilon$, $\epsilon = 0.2$")
ax.set_xlabel(r"ratio $\rho$"); ax.set_ylabel("per-token objective"); ax.legend(loc="best")
ax.set_title(r"clipped surrogate per token: no gain beyond $1 \pm \epsilon$ in the favoured direction"); plt.show()

logp = torch.randn(3, 5, requires_grad=True); a = torch.tensor([1.0, -0.5, -0.5]); mk = torch.ones(3, 5)
loss, stats = grpo_loss(logp, logp.detach(), a, mk, num_tokens=15)
loss.backward()
assert torch.allclose(logp.grad, -a[:, None].expand(3, 5) / 15) and stats["clip_sum"] == 0

# %% [markdown]
# **Exercise 04.1 (observe).** With `update_epochs > 1` the ratio ρ moves away from 1. Change `RHO` (0.7, 0.9,
# 1.1, 1.3) and `A` (+1, −1) and rerun: for which of these eight pairs is the gradient of `grpo_loss` (ε = 0.2)
# exactly 0? Answer as a list of pairs, e.g. `[(0.7, 1.0)]`.

# %%
from exercises import check
import torch
from minipods.grpo import grpo_loss

RHO, A = 1.3, 1.0  # change me: RHO in 0.7, 0.9, 1.1, 1.3; A in +1.0, -1.0
logp = torch.log(torch.tensor([[RHO]])).requires_grad_()  # old log-prob 0, so the ratio is RHO
loss, _ = grpo_loss(logp, torch.zeros(1, 1), torch.tensor([A]), torch.ones(1, 1), num_tokens=1)
loss.backward()
print(f"rho = {RHO}, A = {A:+.0f}: d loss / d log p = {float(logp.grad):+.3f}")
no_gradient = None  # your answer: the (RHO, A) pairs whose gradient is 0

check("04.1", no_gradient)

# %% [markdown]
# ### 2b. Three ways to average over tokens
#
# The surrogate is a sum over tokens; *how it is divided* differs between GRPO's variants. At the first
# gradient step ($\rho = 1$) every token of rollout $i$ gets the same weight $w_i$, and the gradient is
# $-\sum_i w_i \sum_t \nabla \log\pi_\theta(o_{i,t})$:
#
# | variant | divides by | per-token weight $w_i$ | advantage |
# |---|---|---|---|
# | sequence-level (DeepSeekMath's GRPO; TRL `loss_type="grpo"`) | $\lvert o_i\rvert$, then the mean over the $G$ sequences | $A_i / (G\,\lvert o_i\rvert)$ | standardised |
# | token-level (DAPO; TRL's default `"dapo"`; **minipods' default**) | all kept tokens $\sum_j \lvert o_j\rvert$ | $A_i / \sum_j \lvert o_j\rvert$ | standardised |
# | Dr. GRPO (TRL `"dr_grpo"` with `scale_rewards="none"`) | the constant $G \cdot L_{\max}$ (`max_new_tokens`) | $A^{\text{Dr}}_i / (G\,L_{\max})$ | $A^{\text{Dr}}_i = r_i - \bar r$, no std |
#
# Why they differ, in one sentence each:
#
# * **Sequence-level** gives every answer the same total weight, so a token of a long answer counts less
#   than a token of a short one: a long wrong answer is penalised less per token than a short wrong one.
# * **Token-level** gives every token in the batch the same weight, so long answers weigh more in total,
#   and the step size depends on how many tokens this particular batch happened to contain.
# * **Dr. GRPO** makes a token's weight independent of every length in the batch (the divisor is a
#   constant) and drops the std division, so a group whose rewards differ only by a small format bonus
#   gets a proportionally small push instead of advantages as large as those of a group that differs in
#   correctness.
#
# (minipods trains with `loss_type="dapo"` by default; its `paper` preset uses `"grpo"`, the authors' loss.)
#
# Below, on the kept rollouts of section 1 (real completions with their real lengths): one forward pass,
# the three losses built from `grpo_loss` (per row for the sequence-level one), the per-token weights
# checked against autograd, and the three LoRA gradients compared. So that every effect shows whatever
# the model happened to answer, the rewards are set by hand: the first prompt's kept rollouts differ in
# correctness ($1, 0, 1, 0, \dots$), the others' only by a format bonus ($0.025, 0, 0, \dots$).

# %%
mask = batch.completion_mask.float()
lens = mask.sum(1)                                   # |o_i| (the EOS token included)
G_rows, L_MAX = len(batch), max_new                  # G sequences; Dr. GRPO's constant: the generation budget
r_kept = torch.tensor([float((j % 2 == 0) if g == 0 else 0.025 * (j == 0))  # by hand: see above
                       for g in range(P) for j in range(m)])
assert batch.group.tolist() == [g for g in range(P) for _ in range(m)]   # the kept rows, group-major
adv_std = group_advantages(r_kept, batch.group)                                          # what minipods uses
adv_dr = r_kept - torch.stack([r_kept[batch.group == g].mean() for g in batch.group])  # centred, no std
model.train()
lp = token_logprobs(model, *args)                    # (G, C), with the graph for backward
old_lp = lp.detach()

def seq_level_loss(a):  # DeepSeekMath: each sequence's token mean, then the mean over sequences
    return sum(grpo_loss(lp[i:i + 1], old_lp[i:i + 1], a[i:i + 1], mask[i:i + 1], lens[i])[0] for i in range(G_rows)) / G_rows

variants = {  # name -> (loss, the per-token weight w_i the table above predicts)
    "sequence-level (DeepSeekMath)": (seq_level_loss(adv_std), adv_std / (G_rows * lens)),
    "token-level (DAPO, minipods)": (grpo_loss(lp, old_lp, adv_std, mask, mask.sum())[0], adv_std / mask.sum()),
    "Dr. GRPO": (grpo_loss(lp, old_lp, adv_dr, mask, G_rows * L_MAX)[0], adv_dr / (G_rows * L_MAX)),
}

# %% [markdown]
# Each loss's derivative with respect to the per-token log-probs must be $-w_i$ on every token of rollout
# $i$ (checked against autograd). The LoRA gradient then follows by the chain rule from those log-probs
# alone, $\nabla_\theta \mathcal L = \sum_{i,t} \frac{\partial \mathcal L}{\partial \log\pi_{i,t}}\,
# \nabla_\theta \log\pi_{i,t}$: one backward from the log-probs with `grad_outputs` $= \partial\mathcal
# L/\partial\log\pi$ (`lora_gradient` below, the graph kept for the next variant). The three gradients
# are compared by norm and by cosine, $\cos(a, b) = a\cdot b / (|a|\,|b|)$.

# %%
params = [p for p in model.parameters() if p.requires_grad]


def lora_gradient(d_lp):
    """The flat float64 LoRA gradient of a loss whose derivative w.r.t. the log-probs lp is d_lp (G, C)."""
    g = torch.autograd.grad(lp, params, grad_outputs=d_lp, retain_graph=True, allow_unused=True)
    return torch.cat([(x if x is not None else torch.zeros_like(q)).flatten() for x, q in zip(g, params)]).double()


def cosine(a, b):
    return float(a @ b / (a.norm() * b.norm() + 1e-30))


grads = {}
for name, (loss_v, w) in variants.items():
    d_lp = torch.autograd.grad(loss_v, lp, retain_graph=True)[0]        # d loss / d log p(o_i,t)
    assert torch.allclose(d_lp, -w[:, None] * mask, atol=1e-7)           # the table's weights, exactly
    grads[name] = lora_gradient(d_lp)
print(f"{'row':>3} {'|o_i|':>5} {'reward':>6} {'A_i':>6} {'A_Dr':>6} | per-token weight w_i x 1e3: " + " | ".join(variants))
for i in range(G_rows):
    print(f"{i:3d} {int(lens[i]):5d} {float(r_kept[i]):6.3f} {float(adv_std[i]):6.2f} {float(adv_dr[i]):6.3f} | "
          + " | ".join(f"{1e3 * float(w[i]):+9.3f}" for _, w in variants.values()))
for name, g in grads.items():
    print(f"{name:30s} loss {float(variants[name][0].detach()):+.5f} | LoRA gradient norm {float(g.norm()):.3e}")
names = list(grads)
cos = {(a, b): cosine(grads[a], grads[b]) for i, a in enumerate(names) for b in names[i + 1:]}
print("\n".join(f"cosine({a}, {b}) = {c:+.3f}" for (a, b), c in cos.items()))
# the sequence-level loss is exactly 0 at rho = 1 (advantages sum to 0 in each group); its gradient is not
assert abs(float(variants["sequence-level (DeepSeekMath)"][0].detach())) < 1e-5
assert float(grads["sequence-level (DeepSeekMath)"].norm()) > 0
print("sequence-level: loss 0 with a non-zero gradient. At beta = 0 on one on-policy step every ratio is 1, so the "
      "loss is -(1/G) sum_i A_i (each row's token mean of 1 is 1), and the advantages sum to 0 in each group; "
      "its gradient is -(1/G) sum_i A_i times the mean of grad log pi over row i's tokens, which is not 0")
fmt_rows, cor_rows = batch.group == 1, batch.group == 0
print(f"largest |advantage|: correctness group {float(adv_std[cor_rows].abs().max()):.2f} (std) vs "
      f"{float(adv_dr[cor_rows].abs().max()):.3f} (Dr. GRPO); format-only group {float(adv_std[fmt_rows].abs().max()):.2f} "
      f"(std) vs {float(adv_dr[fmt_rows].abs().max()):.3f} (Dr. GRPO)")
assert adv_std[fmt_rows].abs().max() > 0.5 * adv_std[cor_rows].abs().max()  # std: a format-only group is pushed about as hard
assert adv_dr[fmt_rows].abs().max() < 0.05 * adv_dr[cor_rows].abs().max()   # Dr. GRPO: in proportion to 0.025 vs 1
same_len = bool((lens == lens[0]).all())
print("all kept rollouts have the same length: sequence- and token-level coincide" if same_len else
      f"kept lengths range from {int(lens.min())} to {int(lens.max())} tokens: sequence- and token-level weigh rows differently")

# %% [markdown]
# **Reading the gradients.** A loss of exactly 0 with a non-zero gradient (the sequence-level line) is
# not a bug. With $\beta = 0$ and one on-policy step, every ratio $\rho_{i,t}$ is 1 and nothing is
# clipped, so the sequence-level loss is $-\frac1G\sum_i A_i \frac{1}{|o_i|}\sum_t 1 = -\frac1G\sum_i A_i
# = 0$, because the advantages sum to 0 within each group. Its gradient is $-\frac1G\sum_i A_i
# \frac{1}{|o_i|}\sum_t \nabla\log\pi_{i,t}$: the same weights times *different* vectors, which do not
# cancel. The value of a policy-gradient loss says nothing; its derivative is the update. (The
# token-level and Dr. GRPO losses are not 0 only because they weigh rows by their lengths.)
#
# Sequence- and token-level use the same advantages and differ only in how the
# lengths reweight rows (by at most the ratio of the longest to the shortest kept answer), so their
# gradients point most nearly the same way: theirs is the largest of the three cosines printed above.
#
# Dr. GRPO's gradient differs more, and is smaller, for one reason: since $A^{\text{Dr}}_i = A_i \cdot
# (\operatorname{std}_g + \varepsilon)$, within a group $g$ its per-token weight is the token-level one
# times a constant, $c_g = (\operatorname{std}_g + \varepsilon)\,\sum_j |o_j| \,/\, (G\,L_{\max})$. For
# the correctness group $c_g < 1$ (a 0/1 reward's std is below 1, and $G\,L_{\max} \ge \sum_j |o_j|$); for
# the format-only group $c_g$ is near 0. So Dr. GRPO's gradient is the token-level gradient of the
# correctness group alone, scaled down by its $c_g$, plus a small push from the format group: the next
# cell checks that decomposition and splits the ratio of the gradient norms into those two factors.

# %%
w_tok = variants["token-level (DAPO, minipods)"][1]
g_of = {g: lora_gradient(-(w_tok * (batch.group == g))[:, None] * mask) for g in range(P)}  # one group's rows alone
c = {g: float((adv_dr / adv_std)[batch.group == g].mean()) * float(mask.sum()) / (G_rows * L_MAX) for g in range(P)}
dr, tk = grads["Dr. GRPO"], grads["token-level (DAPO, minipods)"]
assert (dr - sum(c[g] * g_of[g] for g in range(P))).norm() < 1e-3 * dr.norm()   # the decomposition, to rounding
share = float(g_of[0].norm() / tk.norm())  # the correctness group's share of the token-level gradient norm
print(f"c_g: correctness group {c[0]:.3f}, format-only group {c[1]:.4f} | cosine(Dr. GRPO, token-level of the "
      f"correctness group alone) = {cosine(dr, g_of[0]):+.3f}")
print(f"|Dr. GRPO| / |token-level| = {float(dr.norm() / tk.norm()):.3f} ~ c_correctness x (correctness group's share of "
      f"|token-level| = {share:.3f}) = {c[0] * share:.3f}")
names = list(grads)
assert cos[names[0], names[1]] > max(cos[names[0], names[2]], cos[names[1], names[2]])
assert c[0] < 1 and c[1] < 0.05 * c[0] and cosine(dr, g_of[0]) > 0.99 and dr.norm() < tk.norm()
assert abs(float(dr.norm() / tk.norm()) - c[0] * share) < 0.05 * float(dr.norm() / tk.norm())
del lp, old_lp

# %% [markdown]
# **Exercise 04.2 (predict, then run).** One prompt, two kept completions: 10 tokens with advantage +1 and
# 40 tokens with advantage −1. Predict how many times larger a token of the *short* answer weighs in the
# gradient under `loss_type="grpo"` (each completion's token mean, then the mean) than under `"dapo"` (every
# token alike), then run the next cell.

# %%
from exercises import check
ratio_prediction = None  # your prediction: (weight of a short-answer token, grpo) / (the same, dapo)

# %%
import torch
from minipods.grpo import grpo_loss

lens = torch.tensor([10, 40])
mask = (torch.arange(40)[None, :] < lens[:, None]).float()  # (2, 40)
for loss_type in ("grpo", "dapo"):
    logp = torch.zeros(2, 40, requires_grad=True)
    loss, _ = grpo_loss(logp, logp.detach(), torch.tensor([1.0, -1.0]), mask, num_tokens=int(mask.sum()),
                        loss_type=loss_type, num_rows=2)
    loss.backward()
    print(f"{loss_type}: a token of the short answer weighs {float(-logp.grad[0, 0]):.4f}, "
          f"of the long one {float(logp.grad[1, 0]):.4f}")

check("04.2", ratio_prediction)

# %% [markdown]
# **Exercise 04.3 (implement).** Write the two loss reductions minipods offers. The check compares with
# `minipods.grpo.reduce_loss` (the whole batch: num_tokens = the real tokens, num_rows = B) on random
# per-token terms and masks, both loss types.

# %%
from exercises import check
import torch

def reduce(per_token, mask, loss_type):
    """The scalar loss from per-token terms (B, C) and the 0/1 mask (B, C) of real tokens. "dapo": the sum over
    real tokens / their number. "grpo": each completion's mean over its real tokens, then the mean over the B."""
    raise NotImplementedError("04.3: your code here")

check("04.3", reduce)

# %% [markdown]
# ## 3. One real update, and the KL through the disabled adapter
#
# LoRA adds $\frac{\alpha}{r} B A x$ to each frozen linear layer $W x$, with $A \in \mathbb R^{r\times d_{in}}$
# random and $B \in \mathbb R^{d_{out}\times r}$ **zero** at initialisation. So before any update the
# policy *is* the reference model: the KL to the adapter-free model is exactly 0. `grpo_update` runs the
# micro-batched forward/backward, clips the gradient norm and takes one AdamW step (lr raised from the
# paper's $5\cdot10^{-6}$ so that one step is visible). Since $B = 0$ only changes if it receives a
# gradient, a batch whose kept advantages are all 0 leaves it untouched.

# %%
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

# %%
LR = 2e-4
lora_B = {k: v.detach().clone() for k, v in model.named_parameters() if "lora_B" in k}
kl_before = kl_to_reference(batch)
opt = make_optimizer(model, make_config(lr=LR), DEVICE)   # AdamW, the paper's betas and weight decay
t, cpu = time.perf_counter(), time.process_time()
stats = grpo_update(model, opt, batch, adv, micro_batch_size=4, max_grad_norm=1.0)
first_update = {"rows": len(batch), "width": batch.prompt_ids.shape[1] + batch.completion_ids.shape[1],
                "wall": time.perf_counter() - t, "cpu": time.process_time() - cpu}  # section 4 compares its timings
print(f"update: {first_update['wall']:.1f} s wall-clock ({first_update['cpu']:.1f} CPU-seconds over "
      f"{torch.get_num_threads()} threads) | loss {stats['loss']:.4f} | grad norm {stats['grad_norm']:.3f}")
kl_after = kl_to_reference(batch)
change = torch.cat([(p.detach() - lora_B[k]).abs().flatten() for k, p in model.named_parameters() if k in lora_B])
moved = float(change.max())
print(f"KL to reference: before {kl_before:.2e}, after {kl_after:.2e} | max |change in a LoRA B| = {moved:.2e} "
      f"(lr = {LR:.2e}) | LoRA B entries moved by 0.9-1.0 x lr: {float((change > 0.9 * LR).float().mean()):.1%}")
assert kl_before == 0.0  # B = 0: the adapter is an exact no-op
if (adv != 0).any():
    assert moved > 0 and kl_after > 0
    assert 0.99 * LR < moved <= LR * (1 + 1e-5)  # Adam's first step: about lr per weight (see below)
else:
    print("all kept advantages are 0 (every kept group had equal rewards): no signal, nothing moved")
    assert moved == 0

# %% [markdown]
# **Why the largest change equals the learning rate.** At AdamW's first step the bias-corrected moment
# estimates are $\hat m = g$ and $\hat v = g^2$, so each weight moves by
# $\mathrm{lr}\cdot g/(|g| + \varepsilon) \approx \pm\,\mathrm{lr}$ whatever the size of its gradient
# (clipping the gradient norm rescales $g$ and changes nothing; weight decay multiplies $B = 0$). So the
# largest change printed is the learning rate itself, and the share of $B$'s entries that moved by
# nearly that much is printed beside it: the first step's size is set by `lr`, not by the size of the
# loss or of its gradient.

# %% [markdown]
# **Exercise 04.4 (predict, then run).** A LoRA B entry starts at 0 and gets a gradient of 3e-6 in the first
# update. Predict how far one AdamW step (lr = 2e-4, betas 0.9 and 0.99, weight decay 0.1) moves it, then run
# the next cell.

# %%
from exercises import check
step_prediction = None  # your prediction: |change of the weight| after one step

# %%
import torch

w = torch.zeros(1, requires_grad=True)  # a LoRA B entry: 0 at the start
opt = torch.optim.AdamW([w], lr=2e-4, betas=(0.9, 0.99), weight_decay=0.1)
w.grad = torch.tensor([3e-6])
opt.step()
print(f"the weight moved by {float(w.detach().abs()):.3e} (lr 2e-4, gradient 3e-6)")

check("04.4", step_prediction)

# %% [markdown]
# ## 4. Update time and memory grow with $m$
#
# The update's cost is set by the rollouts it trains on. We run `grpo_update` (micro-batches of `micro`
# rollouts) on $m$ rollouts for growing $m$, built by repeating the same `micro` rollouts (random
# advantages: their values don't change the cost). From $m$ = `micro` on, every micro-batch is those
# same rollouts — the same size and padded length — and only the number of micro-batches grows with $m$.
# Below `micro` the one micro-batch holds only the first $m$ of them, padded to the longest of those, so
# its length can change with $m$ too: the `micro-batch` column printed below gives each $m$'s shape
# (rows × prompt + completion tokens), and where the length grows, activations grow faster than $m$.
#
# We track the **activations held for backward** with `torch.autograd.graph.saved_tensors_hooks`: each
# tensor autograd saves (parameters excluded) counts from when it is saved until backward releases it,
# and we record the peak — for one forward pass over all $m$ at once, and over the whole micro-batched
# `grpo_update`. `grpo_update` runs here with its plain log-prob function (each row's
# [prompt | completion] in one pass, like the forward it is compared with); training's default,
# `minipods.fast.update.shared_logprobs`, runs each distinct prompt once and holds less.
#
# Timing on a shared CPU is noisy, so each $m$ is timed `REPEATS` times (without the memory hooks), in
# rounds over all $m$ so that a slow spell lands on every $m$ rather than on one; we print the minimum
# and the median, and fit the line to the minima.

# %%
from minipods.measure.memory import peak_saved_bytes  # exact bytes autograd holds for backward (allocator-independent)
from minipods.measure.common import fit_linear

micro = 2 if SMALL else 4                  # micro_batch_size of the update
ms = [1, 2, 4] if SMALL else [1, 2, 4, 8, 16]
REPEATS = 2 if SMALL else 3
opt_t = make_optimizer(model, make_config(lr=1e-9), DEVICE)
grpo_update(model, opt_t, ro.select([0]), torch.randn(1), micro_batch_size=micro)  # warm-up: creates the AdamW state
batches = {k: ro.select([i % micro for i in range(k)]) for k in ms}  # the same `micro` rollouts repeated
times = {k: [] for k in ms}
for _ in range(REPEATS):  # in rounds over all m: a slow spell on a shared CPU then hits every m, not one
    for k, b in batches.items():
        t = time.perf_counter()
        grpo_update(model, opt_t, b, torch.randn(k), micro_batch_size=micro)
        times[k].append(time.perf_counter() - t)

# %%
cost = []
for k, b in batches.items():
    first = b.select(list(range(min(k, micro))))        # the first micro-batch, trimmed as grpo_update trims it
    shape = (len(first), first.prompt_ids.shape[1] + first.completion_ids.shape[1])
    act_all = peak_saved_bytes(model, lambda: token_logprobs(model, b.prompt_ids, b.prompt_mask, b.completion_ids,
                                                             b.completion_mask)) / 2**20
    act_upd = peak_saved_bytes(model, lambda: grpo_update(model, opt_t, b, torch.randn(k), micro_batch_size=micro)) / 2**20
    ts = times[k]
    cost.append(dict(m=k, shape=shape, t_min=min(ts), t_med=float(np.median(ts)), act_all=act_all, act_upd=act_upd))
    print(f"m={k:2d}: micro-batch {shape[0]} x {shape[1]:3d} | update min {min(ts):5.2f} s, median {np.median(ts):5.2f} s "
          f"| activations held: one forward over all m {act_all:7.1f} MiB, grpo_update {act_upd:7.1f} MiB")
assert len({c["shape"] for c in cost if c["m"] >= micro}) == 1      # from m = micro on: the same micro-batches
assert all(x["act_all"] < y["act_all"] for x, y in zip(cost, cost[1:]))         # grows with m ...
for x, y in zip(cost, cost[1:]):  # below micro, a longer padded length makes activations grow faster than the rows
    if y["m"] <= micro and y["shape"][1] > x["shape"][1]:
        assert y["act_all"] / x["act_all"] > y["shape"][0] / x["shape"][0]
capped = [c["act_upd"] for c in cost if c["m"] >= micro]
assert max(capped) < 1.01 * min(capped) and capped[-1] < cost[-1]["act_all"]    # ... but not in the update
at_micro = next(c for c in cost if c["m"] == micro)  # one micro-batch of all m: the same pass as the forward
assert abs(at_micro["act_upd"] - at_micro["act_all"]) < 0.05 * at_micro["act_all"]

# %% [markdown]
# Activations grow with the rows and the padded length of what is held at once. `grpo_update` runs
# forward and backward one micro-batch at a time (gradient accumulation), so only one micro-batch's
# activations are ever held: from $m$ = `micro` on its memory is flat (and at $m$ = `micro` equal to the
# one forward's), but the micro-batches run one after another and time keeps growing with $m$. This is
# the cost PODS holds fixed while it raises $n$. (`python -m minipods.bench` measures time and the
# process's peak memory with repeats and fitted slopes.)

# %%
t_min = np.array([c["t_min"] for c in cost])
slope, icept, r2 = fit_linear(ms, t_min)
print(f"free line: update seconds (min of {REPEATS}) = {icept:.2f} + {slope:.3f} x m, R² = {r2:.3f}")
if icept < 0:  # a negative fixed cost is no cost at all: fit with the intercept held at 0 (its nearest allowed value)
    x = np.asarray(ms, float)
    slope, icept = float(x @ t_min / (x @ x)), 0.0
    r2 = 1 - float(((t_min - slope * x) ** 2).sum() / ((t_min - t_min.mean()) ** 2).sum())
    print(f"intercept held >= 0 (the free line's is negative): update seconds = {slope:.3f} x m, R² = {r2:.3f}; "
          "padded widths by m: " + ", ".join(f"m={c['m']} {c['shape'][1]}" for c in cost))
assert icept >= 0  # the line drawn below has no negative fixed cost
# section 3's single update against these, per token position (rows x padded width) of the update
f = first_update
here = [c for c in cost if c["m"] >= micro]  # full micro-batches, as section 3's
per_pos = {c["m"]: 1e3 * c["t_min"] / (c["m"] * c["shape"][1]) for c in here}
busy = f["wall"] / (f["cpu"] / torch.get_num_threads())  # 1 when its threads had the CPU to themselves
print(f"per token position: section 3's update {1e3 * f['wall'] / (f['rows'] * f['width']):.2f} ms wall-clock "
      f"({f['rows']} x {f['width']}, timed once), {1e3 * f['cpu'] / torch.get_num_threads() / (f['rows'] * f['width']):.2f} ms "
      f"of CPU time per thread; here (fastest of {REPEATS}) " + ", ".join(f"m={k} {v:.2f} ms" for k, v in per_pos.items())
      + f" | section 3's wall-clock / its CPU time per thread = {busy:.1f}")
if not SMALL:  # a wall-clock claim: checked on the full run only
    assert slope > 0 and cost[-1]["t_min"] > cost[0]["t_min"]  # the card's claim: update time grows with m
lessons.plot_update_cost(cost, REPEATS, (slope, icept, r2), micro)

# %% [markdown]
# **The fitted line.** An update's time has a fixed part (the optimizer step over the LoRA weights,
# Python's overheads) and a part per kept row, so a line $a + b\,m$ with $a \ge 0$ is the model. A free
# least-squares line through these points can come out with $a < 0$ (the cell then prints a second,
# constrained line below the "free line"): not a negative cost, but curvature at small $m$. Below $m$ = `micro` the
# one micro-batch holds $m$ rows padded to the longest of them, so a row costs less at $m = 1, 2$ than in
# the full micro-batches from $m$ = `micro` on (the padded widths are printed); the cheap first points
# tilt a straight line down to a negative intercept. The cell therefore fits with the intercept held at
# or above 0 (a negative free intercept is replaced by the least-squares line through the origin) and
# draws that line; the assert keeps it non-negative.
#
# **Section 3's update against these.** Section 3 timed one update of the same kind (its kept rows in
# micro-batches of 4) once, as a single wall-clock reading; here each $m$ is the fastest of `REPEATS`.
# The cell's last line puts them side by side per token position (rows × padded width, what a forward
# and backward pass costs in proportion to), with section 3's wall-clock divided by its CPU time per
# thread: 1 when its threads had the CPU to themselves, more when other work on the machine held them
# off. On a shared CPU one wall-clock reading measures the machine's load as much as the update, which
# is why this section times repeats in rounds and keeps the fastest; a large gap between the two with
# a ratio well above 1 is that load, not the update. With the ratio near 1, what gap remains is the single
# reading's own extras (one reading, not the fastest of several, and the first optimizer step, which
# creates AdamW's state).

# %% [markdown]
# ## 5. 4-bit quantisation + LoRA (QLoRA)
#
# The paper fits Qwen2.5-3B-Instruct on one GPU by storing the frozen base weights in 4-bit NF4
# (bitsandbytes, with double quantisation of the per-block scales) and training only LoRA adapters
# (rank 64, $\alpha = 64$, on every linear projection). Each adapted layer adds $r(d_{in} + d_{out})$
# trainable parameters. We check that count against the model, then apply it to Qwen2.5-3B.

# %%
lora_layers = [mod for mod in model.modules() if hasattr(mod, "lora_A") and hasattr(mod, "base_layer")]
r_ = model.peft_config["default"].r
formula = sum(r_ * (mod.base_layer.in_features + mod.base_layer.out_features) for mod in lora_layers)
counts = count_parameters(model)
print(f"{'tiny model' if SMALL else 'SmolLM2-135M'}, r={r_}: {len(lora_layers)} adapted layers, r(d_in+d_out) summed = {formula:,}; "
      f"count_parameters: {counts['trainable']:,} trainable of {counts['total']:,} ({counts['trainable_frac']:.1%})")
assert formula == counts["trainable"]

# Qwen2.5-3B (config.json): 36 layers, hidden 2048, MLP 11008, 16 query heads and 2 KV heads of size 128
h, f, L, kv = 2048, 11008, 36, 2 * 128
per_layer = (h + h) + 2 * (h + kv) + (h + h) + 2 * (h + f) + (f + h)   # q, k, v, o, gate, up, down
qwen_lora = 64 * per_layer * L
print(f"Qwen2.5-3B, r=64: {qwen_lora / 1e6:.0f}M trainable parameters (~{qwen_lora / 3.09e9:.1%} of 3.09B); "
      f"AdamW state at 8 bytes/param = {qwen_lora * 8 / 2**30:.2f} GiB, base weights at 4 bits ~ {3.09e9 / 2 / 2**30:.1f} GiB")


# %% [markdown]
# Now a 4-bit model (in SMALL mode the package's tiny 2-layer test model, quantised by bitsandbytes on
# CPU; otherwise SmolLM2 in 4 bits), given one update (with fixed $\pm1$ advantages: we only check the
# mechanics; the update must move the adapter). Its loss prints as 0, as in section 2: at the first step
# the ratio is 1, so the loss is minus the advantages' mean over tokens, and ±1 over rows of equal length
# cancel; its gradient does not, which the gradient norm and the changed adapter tensors show. (How
# bitsandbytes' 4-bit layers behave on a CPU, and what their quantisation scales cost: appendix A.)

# %%
from minipods.model import is_4bit

if SMALL:
    q_model, q_tok = tiny_policy(quantize="4bit")
    f_model, _ = tiny_policy()                     # the same model in fp32, for comparison
else:
    q_model, q_tok = load_policy(quantize="4bit", dtype="float32", device=DEVICE)
    f_model = model
assert is_4bit(q_model) and not is_4bit(f_model)

# %%
qitems = synthetic_problems(2, seed=5)
torch.manual_seed(0)
qro = generate_rollouts(q_model, q_tok, [build_prompt(q_tok, it["question"]) for it in qitems], 2,
                        max_new_tokens=16 if SMALL else 32)
before = {k: v.detach().clone() for k, v in q_model.named_parameters() if v.requires_grad}
q_opt = make_optimizer(q_model, make_config(lr=1e-3), DEVICE)
act = peak_saved_bytes(q_model, lambda: token_logprobs(q_model, qro.prompt_ids, qro.prompt_mask, qro.completion_ids,
                                                      qro.completion_mask))
q_stats = grpo_update(q_model, q_opt, qro, torch.tensor([1.0, -1.0] * 2), micro_batch_size=4)
changed = sum(not torch.equal(p, before[k]) for k, p in q_model.named_parameters() if k in before)
print(f"4-bit update: loss {q_stats['loss']:.4f}, grad norm {q_stats['grad_norm']:.3f}, {changed}/{len(before)} adapter tensors changed")
assert changed > 0 and q_stats["skipped"] == 0

# %% [markdown]
# A memory breakdown of that update, counted in bytes (elements × bytes per element) part by part:
#
# * the frozen base: the 4-bit linear weights, two per byte (`uint8` storage), plus their quantisation
#   scales (each block's absmax; appendix A), and the layers that stay unquantised (embeddings, norms: a
#   large share in a small model with a 49k-token vocabulary like SmolLM2); beside it, the same base in
#   float32 (the fp32 model of section 4);
# * the trainable LoRA adapter, its gradient (the same size), and AdamW's state: two float32 moment
#   tensors per trainable parameter (`exp_avg`, `exp_avg_sq`);
# * the activations saved for backward by one micro-batch (measured in the cell above).

# %%
import bitsandbytes as bnb


def nbytes(tensors):
    return sum(t.numel() * t.element_size() for t in tensors)


qs = {"packed": 0, "weights": 0, "absmax": 0, "absmax of absmax": 0}  # bitsandbytes' 4-bit layers
for mod in q_model.modules():
    if isinstance(mod, bnb.nn.Linear4bit):  # the quantised layers (not peft's LoRA wrappers around them)
        state = mod.weight.quant_state
        qs["packed"] += nbytes([mod.weight])
        qs["weights"] += mod.in_features * mod.out_features
        qs["absmax"] += nbytes([state.absmax])
        qs["absmax of absmax"] += nbytes([state.state2.absmax]) if getattr(state, "state2", None) is not None else 0
trainable = [q for q in q_model.parameters() if q.requires_grad]
mem = {
    "base: 4-bit linear weights + scales": qs["packed"] + qs["absmax"] + qs["absmax of absmax"],
    "base: unquantised (embeddings, norms)": nbytes([q for q in q_model.parameters() if not q.requires_grad and q.dtype != torch.uint8]),
    "base: everything in fp32 instead": nbytes([q for q in f_model.parameters() if not q.requires_grad]),
    "LoRA adapter": nbytes(trainable),
    "gradients": nbytes(trainable),
    "AdamW state": nbytes([t for st in q_opt.state.values() for t in st.values() if torch.is_tensor(t) and t.dim() > 0]),
    "activations (1 micro-batch)": act,  # AdamW's 0-d step counts are left out above
}
q_counts = count_parameters(q_model)
print(f"{q_counts['trainable']:,} trainable of {q_counts['total']:,} parameters ({q_counts['trainable_frac']:.1%})")
for k, v in mem.items():
    print(f"{k:38s} {v / 2**20:9.2f} MiB")
assert mem["base: 4-bit linear weights + scales"] + mem["base: unquantised (embeddings, norms)"] < mem["base: everything in fp32 instead"]
assert mem["AdamW state"] == 2 * mem["LoRA adapter"]   # exp_avg and exp_avg_sq, fp32
lessons.plot_memory(mem)

# %% [markdown]
# ## 6. Will it fit my GPU?
#
# `python -m minipods.plan` (`minipods.measure.plan`) prices the paper's recipe on a card: each phase's
# peak from parts counted on the architecture (weights, LoRA, optimizer state, KV cache) and terms
# measured once on a CPU (saved activations, working sets, the log-prob buffer; appendix B says how). The
# two phases are priced apart, because PODS's $n$ and $m$ cost different things. Below: the package's
# `paper` preset (the authors' recipe, its settings printed above the table) for the three Qwen2.5 sizes
# on an 8, 16 and 24 GiB card (1 GiB headroom), and the largest generate call and micro-batch that would
# fit (at most all of a step's rollouts).

# %%
from minipods.measure.plan import PlanConfig, plan
from minipods.presets import PRESETS

cards, sizes, pre = (8, 16, 24), ("0.5B", "1.5B", "3B"), PRESETS["paper"]  # n, m given: price the recipe's pair only
plans = {(gib, s): plan(PlanConfig(model=f"Qwen/Qwen2.5-{s}-Instruct", gpu_gb=gib, n=pre["n"], m=pre["m"]))
         for gib in cards for s in sizes}
r3 = plans[(24, "3B")]["recipe"]  # the paper preset's settings (the same for every row but the model)
print(f"recipe: {r3.prompts} prompt(s) per step, n = {r3.n} -> m = {r3.m}, {r3.prompt_tokens} + {r3.new_tokens} tokens, "
      f"{r3.quantize}, micro-batch {r3.micro_batch}, gradient checkpointing {r3.ckpt}, {r3.gen_batch} rollouts per generate call")
print("| card | model | generation GiB | update GiB | fits | largest generate call | largest micro-batch |")
print("|---|---|---|---|---|---|---|")
for (gib, s), p in plans.items():
    row = p["rows"][0]
    print(f"| {gib} GiB | Qwen2.5-{s} | {p['generation']['peak'] / 2**30:.2f} | {p['update']['peak'] / 2**30:.2f} | "
          f"{'yes' if row['fits'] else 'no'} | {p['gen_batch_max']} | {p['micro_batch_max']} |")

# %%
p3 = plans[(24, "3B")]
kv, act = p3["kv_per_rollout"], p3["activations_per_kept"]
print(f"Why n and m cost different memory (Qwen2.5-3B, {r3.prompt_tokens} + {r3.new_tokens} tokens): a rollout being "
      f"generated holds {kv / 2**20:.0f} MiB of KV cache and no gradients, and at most one generate call's worth "
      f"({p3['generation']['rows']}) is held at once, so n beyond that costs time, not memory; a kept rollout in the update holds "
      f"{act / 2**20:.0f} MiB of activations for backward ({act / kv:.1f}x as much, with gradient checkpointing), "
      f"only a micro-batch's worth ({p3['update']['rows']}) at once, on top of gradients and optimizer state that "
      f"m never changes.")
assert act > kv > 0 and p3["generation"]["rows"] <= r3.gen_batch and p3["update"]["rows"] <= r3.micro_batch

# %% [markdown]
# **Takeaways.** The update needs per-token log-probs of the kept rollouts (computed without the full
# vocabulary tensor), advantages standardised within each kept group, and one clipped-surrogate step
# on the LoRA weights; the reference policy for the KL needs no second model (the adapter switched off),
# and at AdamW's first step every weight moves by about the learning rate, whatever its gradient.
# How the token average is taken (per sequence, per token, by a constant) changes how much each rollout
# weighs, not which rollouts are used: sequence- and token-level gradients agree most closely, while
# Dr. GRPO, without the std, all but ignores a group that differs only by a format bonus. Quantisation and
# LoRA shrink the *static* memory (weights, optimizer state), but time — and the activations of any pass
# that holds all the rollouts at once — still grows with the number of rollouts trained on: the cost PODS
# bounds by updating on $m < n$. On a GPU the same split holds (section 6): $n$ costs generation time
# with a KV cache held for one generate call at a time, $m$ costs update time with activations held for
# one micro-batch at a time.
#
# **On a card.**
#
# * Advantage = reward standardised within the prompt's kept group (sample std, divisor m − 1).
# * Loss = clipped ratio × advantage, averaged over all kept tokens (DAPO-style; DeepSeekMath's GRPO averages per sequence, Dr. GRPO by a constant and without the std); KL reference = the same model, adapter off.
# * Chunked log-probs never build the (batch × length × vocab) tensor.
# * AdamW's first step moves each weight by about lr (section 3's largest change = lr).
# * Update time grows with m (not n): section 4 fits a line to the fastest of repeated runs and prints how well it fits; activation memory is capped by the micro-batch.
# * `python -m minipods.plan` prices both phases of the paper's recipe on a card (section 6).

# %% [markdown]
# ## Appendix A: bitsandbytes' 4-bit layers on a CPU
#
# Library details behind section 5. bitsandbytes' CPU 4-bit layers repack their weights into an
# inference-only layout the first time they run in eval mode without gradients, after which backward
# through them fails — so `model.generation_mode` keeps **4-bit models in train mode while sampling**
# (equivalent here: no dropout), and full-precision models in eval mode.

# %%
from minipods.model import generation_mode

with generation_mode(q_model):
    assert q_model.training        # 4-bit: stays in train mode while sampling
with generation_mode(f_model):
    assert not f_model.training    # full precision: eval mode
print(f"bitsandbytes 4-bit layers: {sum(isinstance(mod, bnb.nn.Linear4bit) for mod in q_model.modules())}")

# %% [markdown]
# What the "+ scales" of section 5's first bar cost (`qs`, counted there): NF4 stores each block
# of weights as 4-bit codes plus the block's absmax; with double quantisation those absmax values are
# themselves stored in 8 bits, with float32 scales of their own.

# %%
for k in ("packed", "absmax", "absmax of absmax"):
    print(f"{k:17s} {qs[k] / 2**20:8.3f} MiB = {8 * qs[k] / qs['weights']:.3f} bits per weight")
assert qs["packed"] * 2 == qs["weights"]                       # two 4-bit weights per byte
assert qs["absmax"] + qs["absmax of absmax"] < 0.1 * qs["packed"]  # the scales: a small fraction of the weights

# %% [markdown]
# ## Appendix B: where the planner's measured terms come from
#
# What a phase holds beyond its weights (saved activations, working sets) depends on the code that runs,
# so `minipods.measure.activations` stores it measured, not derived: `scripts/measure_terms.py` builds
# **shallow twins** of each architecture (`minipods.twins.arch`: 1 and 2 layers at the real width, random
# weights, offline), loads them as training does (4-bit or bf16 base, LoRA, gradient checkpointing), runs
# small batches on a CPU under `minipods.measure.memory`'s exact meters, and fits bytes per token, per
# token per layer and per token pair (attention). Section 6's activations per kept rollout are those
# terms evaluated at the recipe's depth and length:

# %%
u3 = p3["terms"].update[r3.ckpt]  # Qwen2.5-3B, the preset's quantisation and gradient checkpointing
T3, L3 = r3.prompt_tokens + r3.new_tokens, p3["terms"].arch.layers
print(f"terms ({p3['terms'].source}): {u3.tok:.0f} + {L3} layers x {u3.tok_layer:.0f} bytes saved per token, "
      f"{u3.pair:.0f} + {L3} x {u3.pair_layer:.0f} per token pair; working set {u3.work_tok:.0f} per token")
per_row = u3.saved(L3, 1, T3) + u3.working(1, T3) - u3.work_0
print(f"one kept rollout of {T3} tokens: {per_row / 2**20:.0f} MiB (section 6)")
assert per_row == act

print(f"notebook ran in {time.perf_counter() - T0:.0f} s ({'SMALL' if SMALL else 'full'} mode)")
