"""GRPO and GRPO-PODS training loop: `python -m minipods.train`.

Paper, Algorithm 1 (PODS), one iteration per training step (`run_step`):
    1. sample `prompts_per_step` training questions (`step_items`);
    2. inference phase: generate n rollouts per question (minipods.rollouts is the plain
       reference, minipods.fast.rollouts the same contract faster, used unless --no-fast);
    3. score them with the verifiable reward (correctness + format, minipods.rewards);
    4. down-sample: keep m of the n rollouts per question with a rule (`select_kept`:
       max_variance, the paper's choice; max_reward; random). `--method grpo` keeps all (n = m);
    5. policy-update phase: one GRPO update on the kept rollouts only (minipods.grpo; with --fast,
       each distinct prompt runs once and rows with advantage 0 are left out: minipods.fast.update).
`train` repeats it, with evaluation, checkpoints and exact resume around it (minipods.checkpoint).
docs/training.md has the presets and what OUTPUT_DIR holds.
"""

from __future__ import annotations

import json
import math
import random
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from functools import partial
from pathlib import Path

import numpy as np
import torch

from minipods import checkpoint as ckpt_io
from minipods import rollouts
from minipods.checkpoint import eval_path, eval_steps
from minipods.cli import Parser, add_dataclass_args, check_choices, check_positive, fail, overrides, setting
from minipods.data import build_prompt, check_level, load_task
from minipods.downsample import RULES, select_groups
from minipods.evaluate import evaluate_to_file
from minipods.fast.rollouts import generate_rollouts as fast_generate_rollouts
from minipods.fast.update import fast_grpo_update, update_pricing
from minipods.grpo import LOSS_TYPES, group_advantages, grpo_update, loss_scaler
from minipods.memory import peak_mb
from minipods.model import (DEFAULT_MODEL, ModelNotFoundError, check_fp16_forward, check_quantize, default_device,
                            load_policy, resolve_model, use_tf32)
from minipods.presets import PRESETS
from minipods.rewards import is_full_format, score_completions
from minipods.stats import paired_difference
from minipods.twins import arch as _twins  # noqa: F401  (registers the random: model names)


@dataclass
class TrainConfig:
    """Every setting of a run (help strings become --help); validated when made, so one that exists is valid."""
    # model
    model: str = setting(DEFAULT_MODEL, "hub id, local HF folder, .gguf file, 'smollm2-135m-instruct' (offline "
                         "default), or 'random:<hub id>' (architecture twin: real shapes, random weights; measuring only)")
    quantize: str = setting("none", "none | 4bit (bitsandbytes NF4 + double quantisation, QLoRA)")
    dtype: str = setting("auto", "auto (bf16 on CUDA from compute capability 8.0, fp16 below it with dynamic loss "
                                 "scaling, fp32 on CPU) | float32 | bfloat16 | float16")
    device: str = setting("auto", "auto | cpu | cuda | cuda:N")
    lora_r: int = setting(64, "LoRA rank (paper: 64)")
    lora_alpha: int = setting(64, "LoRA alpha (paper: 64)")
    lora_dropout: float = setting(0.0, "LoRA dropout")
    gradient_checkpointing: bool = setting(False, "recompute activations in backward (less memory, slower)")
    fast: bool = setting(True, "the fast engine (minipods.fast: the same results, less work); --no-fast: the plain reference")
    tf32: bool = setting(True, "TF32 matmuls for the float32 parts on CUDA from compute capability 8.0 (config.json's "
                               "tf32_matmuls says whether it was on); --no-tf32: full float32")
    # PODS
    method: str = setting("pods", "grpo (update on all n rollouts, m = n) | pods (generate n, update on m)")
    n: int = setting(16, "rollouts generated per prompt")
    m: int = setting(4, "rollouts kept per prompt for the update (pods); grpo forces m = n")
    rule: str = setting("max_variance", "down-sampling rule: max_variance | max_reward | random")
    adv_norm: str = setting("kept", "advantage normalisation over the kept m (paper) or all n rollouts: kept | all")
    # data and generation
    data: str = setting("gsm8k", "gsm8k | synthetic (seeded easy word problems; also the fallback when GSM8K is missing)")
    data_dir: str | None = setting(None, "folder with GSM8K train.jsonl/test.jsonl (else $MINIPODS_GSM8K_DIR, else the hub)")
    synthetic_level: int = setting(1, "synthetic task difficulty: 0 (single-digit +/-), 1 (one step), 2 (two steps)")
    prompts_per_step: int = setting(8, "questions per training step")
    max_prompt_tokens: int = setting(512, "prompts are left-truncated to this many tokens (paper: 512)")
    max_new_tokens: int = setting(512, "completion length limit (paper: 512)")
    temperature: float = setting(0.9, "sampling temperature for rollouts (paper: 0.9)")
    top_p: float = setting(1.0, "nucleus sampling for rollouts")
    gen_batch_size: int = setting(64, "sequences per generate() call (bounds rollout memory)")
    # optimisation
    max_steps: int = setting(100, "training steps")
    budget_s: float = setting(0.0, "stop once training wall-clock time (excluding evaluation) exceeds this; 0 = no limit")
    lr: float = setting(5e-6, "learning rate, constant (paper: 5e-6)")
    weight_decay: float = setting(0.1, "AdamW weight decay (paper: 0.1)")
    adam_beta1: float = setting(0.9, "AdamW beta1 (paper: 0.9)")
    adam_beta2: float = setting(0.99, "AdamW beta2 (paper: 0.99)")
    optimizer: str = setting("auto", "auto (adamw8bit on CUDA, adamw otherwise) | adamw | adamw8bit")
    max_grad_norm: float = setting(0.1, "gradient-norm clip (paper: 0.1); 0 = off")
    beta: float = setting(0.0, "KL coefficient vs. the adapter-free model (paper's Qwen runs: 0)")
    clip_eps: float = setting(0.2, "PPO-style ratio clip (matters when update_epochs > 1)")
    update_epochs: int = setting(1, "gradient steps per batch of rollouts")
    loss_type: str = setting("dapo", "loss reduction (TRL's names): dapo (token mean over the batch) | grpo (each "
                                     "completion's token mean, then the mean over completions: the authors' code)")
    skip_silent: bool = setting(True, "with --fast and beta 0, leave rows with advantage 0 out of the update (exact: "
                                      "same gradient); --no-skip-silent: every kept row pays, as in the paper and TRL")
    micro_batch_size: int = setting(4, "sequences per forward/backward (gradient accumulation)")
    logprob_chunk: int = setting(512, "tokens per chunk in the log-prob computation (bounds logits memory)")
    # evaluation, checkpoints, bookkeeping
    eval_every: int = setting(0, "evaluate every K steps (and before the first and after the last); 0 = never")
    eval_every_s: float = setting(0.0, "also evaluate at the first step end at or after every T seconds of training "
                                       "time (elapsed_s: one time grid for every arm, as the authors' checkpoints); 0 = off")
    eval_limit: int = setting(100, "test questions for evaluation (a fixed subset: the first N)")
    eval_max_new_tokens: int = setting(0, "completion limit at evaluation; 0 = max_new_tokens")
    eval_batch_size: int = setting(64, "sequences per generate() call at evaluation (questions go this many at a time)")
    save_every: int = setting(10, "checkpoint every K steps (also on Ctrl-C and at the end)")
    seed: int = setting(0, "seed for data order, sampling and the random rule")
    output_dir: str = setting("runs/minipods", "run folder: metrics.jsonl, config.json, checkpoint/, adapter/")
    resume: bool = setting(False, "continue from OUTPUT_DIR/checkpoint")
    progress: bool = setting(True, "show a tqdm progress bar")

    def __post_init__(self):  # a setting that cannot work: ValueError, one line naming the flag
        check_choices(self, {"method": ("grpo", "pods"), "rule": RULES, "adv_norm": ("kept", "all"), "data": ("gsm8k", "synthetic"),
                             "optimizer": ("auto", "adamw", "adamw8bit"), "loss_type": LOSS_TYPES})
        check_positive(self, ("n", "m", "prompts_per_step", "max_new_tokens", "max_steps", "micro_batch_size",
                              "update_epochs", "gen_batch_size", "save_every", "logprob_chunk", "lora_r",
                              "max_prompt_tokens"))
        if self.m > self.n:
            raise ValueError(f"--m ({self.m}) must not exceed --n ({self.n})")
        if self.method == "grpo" and self.m != self.n:
            raise ValueError(f"--method grpo updates on all rollouts: --m ({self.m}) must equal --n ({self.n})")
        check_level(self.synthetic_level)
        check_quantize(self.quantize)
        default_device(self.device)
        if self.lr <= 0 or not math.isfinite(self.lr):
            raise ValueError(f"--lr must be a positive number, got {self.lr}")
        if self.temperature <= 0:
            raise ValueError(f"--temperature must be > 0, got {self.temperature}")
        if min(self.beta, self.eval_every, self.eval_limit, self.budget_s, self.eval_every_s) < 0:
            raise ValueError("--beta, --eval-every, --eval-every-s, --eval-limit and --budget-s must be >= 0")


def make_config(preset: str | None = None, **overrides) -> TrainConfig:
    """Preset values, then explicit overrides; `method="grpo"` sets n = m (from whichever was given)."""
    if preset and preset not in PRESETS:
        raise ValueError(f"unknown preset {preset!r}; expected one of {sorted(PRESETS)}")
    values = dict(PRESETS[preset]) if preset else {}
    explicit = {k: v for k, v in overrides.items() if v is not None}
    values.update(explicit)
    if values.get("method") == "grpo" and not ("n" in explicit and "m" in explicit):
        # vanilla GRPO updates on every rollout: n = m, from an explicit --n or --m, else the
        # preset's m (the paper compares GRPO n=m=16 with PODS n=64, m=16). Both given: validate.
        k = explicit.get("n", explicit.get("m", values.get("m", TrainConfig.m)))
        values["n"] = values["m"] = k
    return TrainConfig(**values)


# ---------------------------------------------------------------- one step of Algorithm 1
def step_items(items: list[dict], step: int, k: int, seed: int) -> list[dict]:
    """The k questions of `step` (1-based): a seeded permutation per epoch, so any step's batch is
    known without replaying the run (resume needs no data-loader state)."""
    out = []
    start = (step - 1) * k
    for j in range(start, start + k):
        epoch, pos = divmod(j, len(items))
        perm = np.random.default_rng([seed, epoch]).permutation(len(items))
        out.append(items[int(perm[pos])])
    return out


def select_kept(rewards: torch.Tensor, n: int, m: int, rule: str, seed: int, step: int) -> list[int]:
    """The flat row indices (ascending, into the P*n group-major rollouts) of the m kept per prompt:
    the rows the update trains on. The random rule's generator is seeded per step (reproducible)."""
    gen = np.random.default_rng([seed, step, 7])
    return select_groups(rewards, n, m, rule, generator=gen)


@dataclass(frozen=True)
class Engine:
    """What a step runs, fixed when the run is set up (`make_engine`): the plain reference (minipods.rollouts,
    minipods.grpo) or the fast engine (minipods.fast: the same results, less work), with the run's settings."""
    generate: Callable  # (model, tok, prompts, n) -> Rollouts: n per prompt, group-major
    update: Callable  # (model, optimizer, kept rollouts, advantages, scaler=) -> {loss, grad_norm, ...}
    pricing: str  # what update_s paid for: config.json's update_pricing
    optimizer: torch.optim.Optimizer
    scaler: torch.amp.GradScaler | None  # fp16's dynamic loss scale (grpo.loss_scaler), else None


def make_engine(cfg: TrainConfig, model, device: str) -> Engine:
    """The run's engine: cfg.fast picks plain or fast; the config's names map to the functions' here, once."""
    sampling = dict(max_new_tokens=cfg.max_new_tokens, temperature=cfg.temperature, top_p=cfg.top_p,
                    batch_size=cfg.gen_batch_size, max_prompt_tokens=cfg.max_prompt_tokens)
    settings = dict(micro_batch_size=cfg.micro_batch_size, clip_eps=cfg.clip_eps, beta=cfg.beta,
                    temperature=cfg.temperature, max_grad_norm=cfg.max_grad_norm or None,
                    update_epochs=cfg.update_epochs, chunk_tokens=cfg.logprob_chunk, loss_type=cfg.loss_type)
    if cfg.fast:
        generate, update = fast_generate_rollouts, partial(fast_grpo_update, skip_silent=cfg.skip_silent)
    else:
        generate, update = rollouts.generate_rollouts, grpo_update
    return Engine(partial(generate, **sampling), partial(update, **settings),
                  update_pricing(cfg.fast, cfg.skip_silent, cfg.beta), make_optimizer(model, cfg, device),
                  loss_scaler(model))


def run_step(model, tok, engine: Engine, cfg: TrainConfig, items: list[dict], step: int) -> dict:
    """One PODS step; returns its metrics row.
    1. sample prompts_per_step questions; 2. generate n rollouts for each (P*n); 3. score them;
    4. keep m per question (`select_kept`) and compute the kept rows' advantages; 5. one GRPO update
    on the kept rows; 6. the metrics row."""
    t0 = time.perf_counter()
    batch = step_items(items, step, cfg.prompts_per_step, cfg.seed)  # 1.
    ro = engine.generate(model, tok, [build_prompt(tok, it["question"]) for it in batch], cfg.n)  # 2.
    scores = score_completions(ro.texts, [it["gold"] for it in batch for _ in range(cfg.n)])  # 3.
    rewards = torch.tensor(scores["reward"])  # (P*n,)
    kept = select_kept(rewards, cfg.n, cfg.m, cfg.rule, cfg.seed, step)  # 4. (P*m,) rows into ro
    kept_batch = ro.select(kept)
    if cfg.adv_norm == "kept":  # the paper: standardise within the kept subset
        adv = group_advantages(rewards[kept], kept_batch.group)
    else:
        adv = group_advantages(rewards, ro.group)[kept]
    t1 = time.perf_counter()
    upd = engine.update(model, engine.optimizer, kept_batch, adv, scaler=engine.scaler)  # 5.
    t2 = time.perf_counter()
    return step_metrics(step, (t0, t1, t2), ro, scores, rewards, kept, adv, upd,  # 6.
                        engine.optimizer.param_groups[0]["lr"])


def step_metrics(step: int, times: tuple, ro, scores: dict, rewards, kept: list[int], adv, upd: dict, lr: float) -> dict:
    """A step's row in metrics.jsonl: timings, rewards before and after down-sampling, the update's statistics."""
    (t0, t1, t2), n = times, ro.n
    r_groups, kept_r = rewards.view(-1, n), rewards[kept]  # (P, n), (P*m,)
    return {
        "step": step, "rollout_s": t1 - t0, "update_s": t2 - t1, "step_s": t2 - t0,
        "reward_mean": float(rewards.mean()), "reward_std": float(rewards.std(unbiased=False)),
        "kept_reward_mean": float(kept_r.mean()), "kept_reward_std": float(kept_r.std(unbiased=False)),
        "correct_frac": float(np.mean(scores["correct"])),
        "format_frac": float(np.mean([is_full_format(f) for f in scores["format"]])),
        "format_reward_mean": float(np.mean(scores["format"])),
        "zero_std_frac": float((r_groups.max(1).values == r_groups.min(1).values).float().mean()),
        "tokens": ro.num_tokens, "tokens_per_s": ro.tokens_per_s,
        "completion_len_mean": ro.num_tokens / len(ro), "update_tokens": int(ro.completion_mask[kept].sum()),
        "kept_rows": len(kept), "silent_rows": int((adv == 0).sum()),  # what the update's pricing counts
        "loss": upd["loss"], "grad_norm": upd["grad_norm"], "kl": upd["kl"], "clip_frac": upd["clip_frac"],
        "skipped": upd["skipped"], "lr": lr, **{k: upd[k] for k in ("loss_scale",) if k in upd},
        "kept_idx": [[i - g * n for i in kept if i // n == g] for g in range(len(r_groups))],
    }


# ---------------------------------------------------------------- the training loop
def make_optimizer(model, cfg: TrainConfig, device: str):
    params = [p for p in model.parameters() if p.requires_grad]
    kind = cfg.optimizer if cfg.optimizer != "auto" else "adamw8bit" if device.startswith("cuda") else "adamw"
    kw = dict(lr=cfg.lr, betas=(cfg.adam_beta1, cfg.adam_beta2), weight_decay=cfg.weight_decay)
    if kind == "adamw8bit":
        import bitsandbytes as bnb
    return bnb.optim.AdamW8bit(params, **kw) if kind == "adamw8bit" else torch.optim.AdamW(params, **kw)


def _evaluate(model, tok, eval_items, cfg, out: Path, step: int) -> dict:
    """Greedy accuracy on the held-out questions, one row per question to eval/step_{step:05d}.jsonl."""
    return evaluate_to_file(model, tok, eval_items, eval_path(out, step), batch_size=cfg.eval_batch_size,
                            max_new_tokens=cfg.eval_max_new_tokens or cfg.max_new_tokens,
                            max_prompt_tokens=cfg.max_prompt_tokens, fast=cfg.fast, progress=cfg.progress)


def train(cfg: TrainConfig, model=None, tokenizer=None) -> Path:
    """Run (or resume) training; returns the run folder. `model`/`tokenizer`: train these, not `cfg.model`."""
    out = ckpt_io.prepare_output_dir(Path(cfg.output_dir))
    with ckpt_io.stop_on_os_error(out), ckpt_io.RunLock(out):
        return _train_locked(cfg, out, model, tokenizer)


def _restore(ck: dict | None, out: Path, model, engine: Engine, device: str) -> dict:
    """The counters of checkpoint `ck` (zeros for a fresh run), its adapter, optimizer, loss scale and RNGs restored;
    metrics rows and evaluation files of later steps (a hard kill) are dropped: those steps run again."""
    metrics_path = out / "metrics.jsonl"
    state = {"step": 0, "elapsed_s": 0.0, "nonfinite_skips": 0}
    if ck is not None:
        from peft import set_peft_model_state_dict
        set_peft_model_state_dict(model, {k: v.to(device) for k, v in ck["adapter"].items()})
        state = {k: ck["state"][k] for k in state}
        engine.optimizer.load_state_dict(ck["trainer"]["optimizer"])
        if engine.scaler and ck["trainer"].get("scaler"):  # fp16: the scale it had reached, not 2^16 anew
            engine.scaler.load_state_dict(ck["trainer"]["scaler"])
        ckpt_io.set_rng_state(ck["trainer"]["rng"])
    ckpt_io.write_rows(metrics_path, [r for r in ckpt_io.read_log(metrics_path) if r["step"] <= state["step"]] if ck else [])
    for k in eval_steps(out):
        if k > state["step"]:
            eval_path(out, k).unlink()
    return state


def _setup(cfg: TrainConfig, model, tokenizer):
    """Seeds, data and policy: (items, eval_items, data source, model, tokenizer, device)."""
    random.seed(cfg.seed)
    np.random.seed(cfg.seed)
    torch.manual_seed(cfg.seed)
    items, source = load_task(cfg.data, "train", cfg.data_dir, seed=cfg.seed, level=cfg.synthetic_level)
    eval_items = []
    if (cfg.eval_every or cfg.eval_every_s) and cfg.eval_limit:
        eval_items = load_task(cfg.data, "test", cfg.data_dir, limit=cfg.eval_limit, seed=cfg.seed, notice=False,
                               level=cfg.synthetic_level)[0]
    if model is None:
        model, tokenizer = load_policy(cfg.model, quantize=cfg.quantize, lora_r=cfg.lora_r, lora_alpha=cfg.lora_alpha,
                                       lora_dropout=cfg.lora_dropout, dtype=cfg.dtype, device=cfg.device,
                                       gradient_checkpointing=cfg.gradient_checkpointing)
    return items, eval_items, source, model, tokenizer, str(next(model.parameters()).device)


def _progress_bar(cfg: TrainConfig, start: int):
    from tqdm.auto import tqdm  # disabled (--no-progress): every call is a no-op
    # a training-time budget ends the run, not max_steps: a step total would promise a false ETA
    budget = f", {cfg.budget_s:.0f} s budget" if cfg.budget_s else ""
    return tqdm(total=None if cfg.budget_s else cfg.max_steps, initial=start, unit="step",
                desc=f"{cfg.method} n={cfg.n} m={cfg.m}{budget}", disable=not cfg.progress)


def run_estimate(cfg: TrainConfig, rows: list[dict]) -> str:
    """One line after a run's first step (the last of `rows`, metrics.jsonl's): its time and the whole run's,
    with the evaluations at the time they took so far (step 0's at least), so that a slow CPU shows at once."""
    step_s, eval_s = rows[-1]["step_s"], [r["eval_s"] for r in rows if "eval_s" in r]
    steps = min(cfg.max_steps, math.ceil(cfg.budget_s / step_s)) if cfg.budget_s else cfg.max_steps
    evals = 0
    if eval_s:  # step 0, every K steps or T seconds of training, the last
        grid = set(range(cfg.eval_every, steps + 1, cfg.eval_every)) if cfg.eval_every else set()
        evals = len(grid | {0, steps}) + (int(steps * step_s // cfg.eval_every_s) if cfg.eval_every_s else 0)
    total = steps * step_s + evals * sum(eval_s) / max(len(eval_s), 1)
    took = f"{total:.0f} s" if total < 100 else f"{total / 60:.0f} min" if total < 6000 else f"{total / 3600:.1f} h"
    budget = f" within the {cfg.budget_s:.0f} s budget" if cfg.budget_s else ""
    evaluations = f" + {evals} evaluations of ~{sum(eval_s) / len(eval_s):.0f} s" if evals else ""
    return (f"minipods.train: step {rows[-1]['step']} took {step_s:.1f} s; about {took} for the whole run "
            f"({steps} steps{budget}{evaluations})")


def eval_due(cfg: TrainConfig, step: int, before_s: float, after_s: float) -> bool:
    """Evaluate after `step` (training time before_s -> after_s)? Every eval_every steps, or when it crossed
    a multiple of eval_every_s (as the authors' checkpoint callback; late by less than one step)."""
    by_step = cfg.eval_every and step % cfg.eval_every == 0
    by_time = cfg.eval_every_s and math.floor(after_s / cfg.eval_every_s) > math.floor(before_s / cfg.eval_every_s)
    return bool(by_step or by_time)


def _train_locked(cfg: TrainConfig, out: Path, model, tokenizer) -> Path:
    ck = ckpt_io.load_checkpoint(out) if cfg.resume else None  # what --resume continues from, checked before any work
    if cfg.resume and ck is None:
        print(f"minipods.train: --resume: no checkpoint in {out}, starting from step 1", file=sys.stderr)
    if not cfg.resume and (out / "metrics.jsonl").exists():
        raise ckpt_io.RunError(f"{out} already holds a run (metrics.jsonl); use --resume or another --output-dir")
    items, eval_items, source, model, tokenizer, device = _setup(cfg, model, tokenizer)
    engine, tf32 = make_engine(cfg, model, device), use_tf32(cfg.tf32, device)
    if engine.scaler:  # float16: the first real prompt must not overflow
        check_fp16_forward(model, tokenizer, build_prompt(tokenizer, items[0]["question"]))
    st = _restore(ck, out, model, engine, device)
    ckpt_io.write_atomic(out / "config.json", json.dumps({**asdict(cfg), "device": device, "data_source": source,
                                                          "num_train_items": len(items), "update_pricing": engine.pricing,
                                                          "tf32_matmuls": tf32}, indent=1))
    metrics_path = out / "metrics.jsonl"
    if eval_items and st["step"] == 0:
        ckpt_io.append_row(metrics_path, {"step": 0, "elapsed_s": 0.0,
                                          **_evaluate(model, tokenizer, eval_items, cfg, out, 0)})
    step = last_saved = st["step"]
    bar, first = _progress_bar(cfg, step), step + 1
    try:
        with ckpt_io.sigterm_as_interrupt():
            while step < cfg.max_steps and not (cfg.budget_s and st["elapsed_s"] >= cfg.budget_s):
                row = run_step(model, tokenizer, engine, cfg, items, step + 1)
                step = st["step"] = step + 1
                before, st["elapsed_s"] = st["elapsed_s"], st["elapsed_s"] + row["step_s"]
                st["nonfinite_skips"] += row["skipped"]
                if row["skipped"]:  # reported, never silent: a run of these means it is not learning
                    print(f"minipods.train: step {step}: non-finite gradient, update skipped", file=sys.stderr)
                row.update(elapsed_s=st["elapsed_s"], nonfinite_skips=st["nonfinite_skips"], peak_mem_mb=peak_mb(device))
                final = step >= cfg.max_steps or (cfg.budget_s and st["elapsed_s"] >= cfg.budget_s)
                if eval_items and (final or eval_due(cfg, step, before, st["elapsed_s"])):
                    row.update(_evaluate(model, tokenizer, eval_items, cfg, out, step))
                ckpt_io.append_row(metrics_path, row)
                if cfg.progress and step == first:  # how long the run will take, said once (one line)
                    bar.write(run_estimate(cfg, ckpt_io.read_log(metrics_path)), file=sys.stderr)
                if step % cfg.save_every == 0 or final:  # save if due
                    ckpt_io.save_checkpoint(out, model, engine.optimizer, dict(st), engine.scaler)
                    last_saved = step
                bar.update(1)
                bar.set_postfix({"reward": f"{row['reward_mean']:.3f}", "acc": f"{row['correct_frac']:.2f}",
                                 **({"eval": f"{row['eval_accuracy']:.3f}"} if "eval_accuracy" in row else {})})
    except (KeyboardInterrupt, rollouts.NonFiniteLogits) as e:  # whole steps saved; main prints NonFiniteLogits in one line
        if step > last_saved:
            ckpt_io.save_checkpoint(out, model, engine.optimizer, dict(st), engine.scaler)
        if isinstance(e, KeyboardInterrupt):
            print(f"\nminipods.train: interrupted after step {step}; checkpoint saved. Continue with --resume.",
                  file=sys.stderr)
        raise
    finally:
        bar.close()
    ckpt_io.save_adapter(out, model)
    report_learning(out)
    return out


def report_learning(out: Path) -> None:
    """A run's last words: learning_curve.png and the first vs. the last evaluation on the same questions."""
    from minipods.learning_curve import plot_learning_curve  # here: matplotlib loads only at the end
    plot_learning_curve(out, out / "learning_curve.png")
    steps = eval_steps(out)
    if len(steps) >= 2:  # questions matched by index
        first, last = (ckpt_io.read_log(eval_path(out, s), drop_torn_tail=False) for s in (steps[0], steps[-1]))
        later = {r["index"]: r["correct"] for r in last}
        pairs = [(r["correct"], later[r["index"]]) for r in first if r["index"] in later]
        ch = paired_difference([a for a, _ in pairs], [b for _, b in pairs])
        lo, hi = ch["ci95"]
        print(f"eval accuracy {100 * ch['acc_a']:.1f}% -> {100 * ch['acc_b']:.1f}% ({100 * ch['diff']:+.1f} points, "
              f"paired 95% CI [{100 * lo:+.1f}, {100 * hi:+.1f}], {ch['n']} questions)")


# ---------------------------------------------------------------- CLI
def build_parser() -> Parser:
    p = Parser(prog="python -m minipods.train", description=__doc__.split("\n\n")[0])
    p.add_argument("--small", action="store_true", help="CPU-sized preset (= --preset small)")
    p.add_argument("--preset", choices=sorted(PRESETS), default=None, help="named settings; explicit flags override")
    add_dataclass_args(p, TrainConfig)
    return p


def config_from_args(argv=None) -> TrainConfig:
    args = build_parser().parse_args(argv)
    if args.small and args.preset and args.preset != "small":
        raise ValueError(f"--small conflicts with --preset {args.preset}")
    return make_config(args.preset or ("small" if args.small else None), **overrides(args, TrainConfig))


def main(argv=None) -> int:
    try:
        cfg = config_from_args(argv)
        if cfg.model != DEFAULT_MODEL:
            resolve_model(cfg.model)  # a missing path fails here, before any work
        out = train(cfg)
    except KeyboardInterrupt:
        return 130
    except (ValueError, ModelNotFoundError, ckpt_io.RunError) as e:
        return fail("minipods.train", e)
    print(f"done: {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
