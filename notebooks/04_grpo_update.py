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
# **Question.** What does one GRPO update on the kept rollouts compute, and what does it cost in time and memory as m grows?
#
# **Time here**: a few minutes in full mode on a 2-core CPU, about a minute in small mode; the last cell prints this run's total.
#
# The second, expensive phase of a PODS step (Xu, Savani, Fang, Kolter, *Not All Rollouts are Useful: Down-Sampling Rollouts in LLM Reinforcement Learning*, TMLR 2026): one GRPO update on the $m$ kept
# rollouts of each prompt. Step by step with `minipods.grpo`: advantages on the kept subset, per-token
# log-probabilities (chunked vs. naive), the clipped objective and three ways of averaging it over tokens
# (DeepSeekMath's GRPO, DAPO — what minipods uses — and Dr. GRPO), the KL penalty through the *disabled
# adapter*, a real update that changes the LoRA weights, how update time and memory grow with $m$, and
# what 4-bit quantisation + LoRA (QLoRA, the paper's setting) save.

# %%
import os, time, warnings

import minipods  # installed by scripts/setup.sh (pip install -e .)

import numpy as np
import torch
import matplotlib.pyplot as plt

warnings.filterwarnings("ignore", category=FutureWarning)
SMALL = os.environ.get("MINIPODS_NB_SMALL") == "1"  # tiny sizes (the test suite sets this)
T0 = time.perf_counter()
torch.manual_seed(0)
print(f"{'SMALL' if SMALL else 'full'} mode | torch {torch.__version__} | {torch.get_num_threads()} CPU threads")

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
# and TRL's code), not the population one (`np.std`, divisor $m$); the last lines of the next cell show
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
model, tok = tiny_policy() if SMALL else load_policy()
P, n, m, max_new = (2, 4, 2, 48) if SMALL else (2, 8, 4, 128)
items = synthetic_problems(P, seed=2)
torch.manual_seed(0)
ro = generate_rollouts(model, tok, [build_prompt(tok, it["question"]) for it in items], n,
                       max_new_tokens=max_new, batch_size=16)
rewards = torch.tensor(score_completions(ro.texts, [it["gold"] for it in items for _ in range(n)])["reward"])
flat = select_kept(rewards, n, m, "max_variance", seed=0, step=1)           # (P*m,) rows into ro, group-major
batch = ro.select(flat)                                                     # the kept rollouts only
adv = group_advantages(rewards[flat], batch.group)
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
print(f"naive log-softmax: {B}x{C}x{V} floats = {B * C * V * 4 / 2**20:.0f} MB here; "
      f"paper scale (16 x 512 x 151,936) = {16 * 512 * 151936 * 4 / 2**30:.1f} GB")
n_tok = int(batch.completion_mask.sum())
print(f"chunked (chunk_tokens={CHUNK}): {-(-n_tok // CHUNK)} chunks of at most {CHUNK} x {V} floats = "
      f"{CHUNK * V * 4 / 2**20:.0f} MB at a time (the default 512: {512 * V * 4 / 2**20:.0f} MB)")

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
# ### 2b. Three ways to average over tokens
#
# The surrogate is a sum over tokens; *how it is divided* differs between GRPO's variants. At the first
# gradient step ($\rho = 1$) every token of rollout $i$ gets the same weight $w_i$, and the gradient is
# $-\sum_i w_i \sum_t \nabla \log\pi_\theta(o_{i,t})$:
#
# | variant | divides by | per-token weight $w_i$ | advantage |
# |---|---|---|---|
# | sequence-level (DeepSeekMath's GRPO; TRL `loss_type="grpo"`) | $\lvert o_i\rvert$, then the mean over the $G$ sequences | $A_i / (G\,\lvert o_i\rvert)$ | standardised |
# | token-level (DAPO; TRL's default `"dapo"`; **minipods**) | all kept tokens $\sum_j \lvert o_j\rvert$ | $A_i / \sum_j \lvert o_j\rvert$ | standardised |
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
#   gets a proportionally small push instead of the same $\pm 1$ advantages as a group that differs in
#   correctness.
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
params = [p for p in model.parameters() if p.requires_grad]
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
print(f"{'row':>3} {'|o_i|':>5} {'reward':>6} {'A_i':>6} {'A_Dr':>6} | per-token weight x 1e3: " + " | ".join(variants))
for i in range(G_rows):
    print(f"{i:3d} {int(lens[i]):5d} {float(r_kept[i]):6.3f} {float(adv_std[i]):6.2f} {float(adv_dr[i]):6.3f} | "
          + " | ".join(f"{1e3 * float(w[i]):+9.3f}" for _, w in variants.values()))
grads = {}
for name, (loss_v, w) in variants.items():
    d_lp = torch.autograd.grad(loss_v, lp, retain_graph=True)[0]        # d loss / d log p(o_i,t)
    assert torch.allclose(d_lp, -w[:, None] * mask, atol=1e-7)           # the table's weights, exactly
    g = torch.autograd.grad(loss_v, params, retain_graph=True, allow_unused=True)
    grads[name] = torch.cat([(x if x is not None else torch.zeros_like(p)).flatten() for x, p in zip(g, params)]).double()
    print(f"{name:30s} loss {float(loss_v.detach()):+.5f} | LoRA gradient norm {float(grads[name].norm()):.3e}")
names = list(grads)
for a_, b_ in [(0, 1), (0, 2), (1, 2)]:
    ga, gb = grads[names[a_]], grads[names[b_]]
    cos = float(ga @ gb / (ga.norm() * gb.norm() + 1e-30))
    print(f"cosine({names[a_]}, {names[b_]}) = {cos:+.3f}")
del lp, old_lp
# the sequence-level loss is exactly 0 at rho = 1 (advantages sum to 0 in each group); its gradient is not
assert abs(float(variants["sequence-level (DeepSeekMath)"][0].detach())) < 1e-5
if P > 1:  # with the std a format-only group is pushed as hard as a correctness group; without it, in proportion to 0.025 vs 1
    fmt_rows, cor_rows = batch.group == 1, batch.group == 0
    print(f"largest |advantage|: correctness group {float(adv_std[cor_rows].abs().max()):.2f} (std) vs "
          f"{float(adv_dr[cor_rows].abs().max()):.3f} (Dr. GRPO); format-only group {float(adv_std[fmt_rows].abs().max()):.2f} "
          f"(std) vs {float(adv_dr[fmt_rows].abs().max()):.3f} (Dr. GRPO)")
    assert adv_std[fmt_rows].abs().max() > 0.5 * adv_std[cor_rows].abs().max()
    assert adv_dr[fmt_rows].abs().max() < 0.05 * adv_dr[cor_rows].abs().max()
same_len = bool((lens == lens[0]).all())
print("all kept rollouts have the same length: sequence- and token-level coincide" if same_len else
      f"kept lengths range from {int(lens.min())} to {int(lens.max())} tokens: sequence- and token-level weigh rows differently")

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

# %% [markdown]
# ## 4. Update time and memory grow with $m$
#
# The update's cost is set by the rollouts it trains on. We run `grpo_update` on $m$ rollouts for growing
# $m$ — the same few rollouts repeated, so that every micro-batch has the same size and length and only
# $m$ changes (random advantages: their values don't change the cost). We track the **activations held
# for backward** with `torch.autograd.graph.saved_tensors_hooks`: each tensor autograd saves (parameters
# excluded) counts from when it is saved until backward releases it, and we record the peak — for one
# forward pass over all $m$ at once, and over the whole micro-batched `grpo_update`. `grpo_update` runs
# here with its plain log-prob function (each row's [prompt | completion] in one pass, like the forward
# it is compared with); training's default, `minipods.fast.update.shared_logprobs`, runs each distinct
# prompt once and holds less.
#
# Timing on a shared CPU is noisy, so each $m$ is timed `REPEATS` times (without the memory hooks), in
# rounds over all $m$ so that a slow spell lands on every $m$ rather than on one; we print the minimum
# and the median, and fit the line to the minima.
#
# Activations grow linearly with the batch (sequences × padded length). `grpo_update` runs forward and
# backward one micro-batch at a time (gradient accumulation), so only one micro-batch's activations are
# ever held: memory is capped, but the micro-batches run one after another and time keeps growing with
# $m$. This is the cost PODS holds fixed while it raises $n$. (`python -m minipods.bench` measures time
# and the process's peak memory with repeats and fitted slopes.)

# %%
from minipods.measure.memory import peak_saved_bytes  # exact bytes autograd holds for backward (allocator-independent)

micro = 2 if SMALL else 4                  # micro_batch_size of the update
ms = [1, 2, 4] if SMALL else [1, 2, 4, 8, 16]
opt_t = make_optimizer(model, make_config(lr=1e-9), "cpu")
grpo_update(model, opt_t, ro.select([0]), torch.randn(1), micro_batch_size=micro)  # warm-up: creates the AdamW state
from minipods.measure.common import fit_linear

REPEATS = 2 if SMALL else 3
batches = {k: ro.select([i % micro for i in range(k)]) for k in ms}  # the same `micro` rollouts repeated: only m changes
times = {k: [] for k in ms}
for _ in range(REPEATS):  # in rounds over all m: a slow spell on a shared CPU then hits every m, not one
    for k, b in batches.items():
        t = time.perf_counter()
        grpo_update(model, opt_t, b, torch.randn(k), micro_batch_size=micro)
        times[k].append(time.perf_counter() - t)
cost = []
for k, b in batches.items():
    act_all = peak_saved_bytes(model, lambda: token_logprobs(model, b.prompt_ids, b.prompt_mask, b.completion_ids,
                                                             b.completion_mask)) / 2**20
    act_upd = peak_saved_bytes(model, lambda: grpo_update(model, opt_t, b, torch.randn(k), micro_batch_size=micro)) / 2**20
    ts = times[k]
    cost.append(dict(m=k, t_min=min(ts), t_med=float(np.median(ts)), act_all=act_all, act_upd=act_upd))
    print(f"m={k:2d}: update min {min(ts):5.2f} s, median {np.median(ts):5.2f} s of {REPEATS} | activations held at once: "
          f"one forward over all m {act_all:7.1f} MB, grpo_update (micro-batch {micro}) {act_upd:7.1f} MB")
assert all(x["act_all"] < y["act_all"] for x, y in zip(cost, cost[1:]))         # grows with m ...
capped = [c["act_upd"] for c in cost if c["m"] >= micro]
assert max(capped) < 1.01 * min(capped) and capped[-1] < cost[-1]["act_all"]    # ... but not in the update
at_micro = next(c for c in cost if c["m"] == micro)  # one micro-batch of all m: the same pass as the forward
print(f"m = micro-batch = {micro}: grpo_update holds {at_micro['act_upd']:.1f} MB, one forward {at_micro['act_all']:.1f} MB")
assert abs(at_micro["act_upd"] - at_micro["act_all"]) < 0.05 * at_micro["act_all"]
slope, icept, r2 = fit_linear(ms, [c["t_min"] for c in cost])
print(f"update seconds (min of {REPEATS}) = {icept:.2f} + {slope:.3f} x m, R² = {r2:.3f}: "
      + ("close to a line" if r2 >= 0.95 else "not a clean line on this run (see the medians: a shared CPU adds noise)"))
if not SMALL:  # a wall-clock claim: checked on the full run only
    assert slope > 0 and cost[-1]["t_min"] > cost[0]["t_min"]  # the card's claim: update time grows with m

fig, (a1, a2) = plt.subplots(1, 2, figsize=(11, 3.4))
a1.plot(ms, [c["t_min"] for c in cost], "o-", label=f"min of {REPEATS}")
a1.plot(ms, [c["t_med"] for c in cost], "x", color="grey", label=f"median of {REPEATS}")
a1.plot(ms, [icept + slope * k for k in ms], ":", color="tab:blue", label=f"fit, R² = {r2:.2f}")
a1.set_xlabel("kept rollouts m"); a1.set_ylabel("update seconds"); a1.legend(loc="best", fontsize=8)
a1.set_title("update time grows with m")
a2.plot(ms, [c["act_all"] for c in cost], "o-", color="tab:orange", label="one forward over all m")
a2.plot(ms, [c["act_upd"] for c in cost], "s--", color="tab:green", label=f"grpo_update, micro-batches of {micro}")
a2.set_xlabel("kept rollouts m"); a2.set_ylabel("activations held for backward (MB)"); a2.legend(loc="best", fontsize=8)
a2.set_title("activation memory is capped by the micro-batch")
plt.tight_layout(); plt.show()

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
print(f"SmolLM2-135M, r={r_}: {len(lora_layers)} adapted layers, r(d_in+d_out) summed = {formula:,}; "
      f"count_parameters: {counts['trainable']:,} trainable of {counts['total']:,} ({counts['trainable_frac']:.1%})")
assert formula == counts["trainable"]

# Qwen2.5-3B (config.json): 36 layers, hidden 2048, MLP 11008, 16 query heads and 2 KV heads of size 128
h, f, L, kv = 2048, 11008, 36, 2 * 128
per_layer = (h + h) + 2 * (h + kv) + (h + h) + 2 * (h + f) + (f + h)   # q, k, v, o, gate, up, down
qwen_lora = 64 * per_layer * L
print(f"Qwen2.5-3B, r=64: {qwen_lora / 1e6:.0f}M trainable parameters (~{qwen_lora / 3.09e9:.1%} of 3.09B); "
      f"AdamW state at 8 bytes/param = {qwen_lora * 8 / 2**30:.2f} GB, base weights at 4 bits ~ {3.09e9 / 2 / 2**30:.1f} GB")

# %% [markdown]
# Now a 4-bit model (in SMALL mode the package's tiny 2-layer test model, quantised by bitsandbytes on
# CPU; otherwise SmolLM2 in 4 bits). One practical detail: bitsandbytes' CPU 4-bit layers repack their
# weights into an inference-only layout the first time they run in eval mode without gradients, after
# which backward through them fails — so `model.generation_mode` keeps **4-bit models in train mode
# while sampling** (equivalent here: no dropout), and full-precision models in eval mode.

# %%
import bitsandbytes as bnb
from minipods.model import generation_mode, is_4bit
from minipods.twins.tiny import tiny_policy

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
q_counts = count_parameters(q_model)
print(f"bitsandbytes 4-bit layers: {sum(isinstance(mod, bnb.nn.Linear4bit) for mod in q_model.modules())} | "
      f"{q_counts['trainable']:,} trainable of {q_counts['total']:,} parameters ({q_counts['trainable_frac']:.1%})")


# %% [markdown]
# A memory breakdown of one 4-bit update: the frozen base (packed 4-bit linear weights with their
# quantisation scales, plus the embeddings and norms, which stay unquantised — a large share in a small
# model with a 49k-token vocabulary like SmolLM2), the trainable adapter, its gradient, AdamW's two moment
# tensors per trainable parameter, and the activations saved for one micro-batch. The update must move
# the adapter (here with fixed $\pm1$ advantages: we only check the mechanics).

# %%
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

# %% [markdown]
# **Takeaways.** The update needs per-token log-probs of the kept rollouts (computed without the full
# vocabulary tensor), advantages standardised within each kept group, and one clipped-surrogate step
# on the LoRA weights; the reference policy for the KL costs no memory (adapter off). Quantisation and
# LoRA shrink the *static* memory (weights, optimizer state), but time — and the activations of any pass
# that holds all the rollouts at once — still grows with the number of rollouts trained on: the cost PODS
# bounds by updating on $m < n$. How the token average is taken (per sequence, per token, by a constant)
# changes how much each rollout weighs, not which rollouts are used.
#
# **On a card.**
#
# * Advantage = reward standardised within the prompt's kept group (sample std, divisor m − 1).
# * Loss = clipped ratio × advantage, averaged over all kept tokens (DAPO-style; DeepSeekMath's GRPO averages per sequence, Dr. GRPO by a constant); KL reference = the same model, adapter off.
# * Chunked log-probs never build the (batch × length × vocab) tensor.
# * Update time grows with m (not n): section 4 fits a line to the fastest of repeated runs and prints how well it fits; activation memory is capped by the micro-batch.

# %% [markdown]
# ## 6. Will it fit my GPU?
#
# `python -m minipods.plan` (`minipods.measure.plan`) prices the paper's recipe on a card: each phase's
# peak from parts counted on the architecture (weights, LoRA, optimizer state, KV cache) and terms
# measured on a CPU with shallow twins (saved activations, working sets, the log-prob buffer). The
# two phases are priced apart, because PODS's $n$ and $m$ cost different things. Below: the paper
# recipe (8 prompts, $n=64 \to m=16$, 512 + 512 tokens, 4-bit, micro-batch 4, gradient checkpointing,
# 64 rollouts per generate call) for the three Qwen2.5 sizes on an 8, 16 and 24 GB card (GiB, 1 GiB
# headroom), and the largest generate call and micro-batch that would fit.

# %%
from minipods.measure.plan import PlanConfig, plan

cards, sizes = (8, 16, 24), ("0.5B", "1.5B", "3B")
plans = {(gb, s): plan(PlanConfig(model=f"Qwen/Qwen2.5-{s}-Instruct", gpu_gb=gb, n=64, m=16)) for gb in cards for s in sizes}
print("| card | model | generation GiB | update GiB | fits | largest generate call | largest micro-batch |")
print("|---|---|---|---|---|---|---|")
for (gb, s), p in plans.items():
    row = p["rows"][0]
    print(f"| {gb} GB | Qwen2.5-{s} | {p['generation']['peak'] / 2**30:.2f} | {p['update']['peak'] / 2**30:.2f} | "
          f"{'yes' if row['fits'] else 'no'} | {p['gen_batch_max']} | {p['micro_batch_max']} |")
p3 = plans[(24, "3B")]
kv, act = p3["kv_per_rollout"], p3["activations_per_kept"]
print(f"\nWhy n and m cost different memory (Qwen2.5-3B, 512 + 512 tokens): a rollout being generated holds "
      f"{kv / 2**20:.0f} MiB of KV cache and no gradients, and only one generate call's worth "
      f"({p3['generation']['rows']}) is held at once, so n costs time, not memory; a kept rollout in the update holds "
      f"{act / 2**20:.0f} MiB of activations for backward ({act / kv:.1f}x as much, with gradient checkpointing), "
      f"only a micro-batch's worth ({p3['update']['rows']}) at once, on top of gradients and optimizer state that "
      f"m never changes.")
assert all(p["rows"][0]["n"] == 64 for p in plans.values()) and act > 0 and kv > 0
print(f"notebook ran in {time.perf_counter() - T0:.0f} s ({'SMALL' if SMALL else 'full'} mode)")
