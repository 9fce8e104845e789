"""minipods beside TRL: one warm GRPO step of each, same settings: `python scripts/vs_trl.py [--quick]`.

Same model, prompts, n, completion length, LoRA, dtype, torch threads and optimizer; each framework
runs in a fresh worker process (memory.run_worker) and reports the wall and CPU time of its second
step, split into generation (sampling + rewards + advantages) and update, and the plain peak RSS of
that step (what a user would see; not the exact mode of the update/logprob parts). It takes
the flags of `python -m minipods.bench` (the model, dtype, threads, LoRA, micro-batch, trl_*; --quick)
and prints the same table. Needs `pip install -r requirements-trl.txt -c requirements.txt`; skipped
without trl.
"""

from __future__ import annotations

import resource
import tempfile
import time

import torch

from minipods.measure.common import fmt_mb, fmt_s, fmt_x, ratio, sync
from minipods.measure.config import BenchConfig
from minipods.measure.memory import peak_mb, reset_peak, rss_mb, run_worker

TRL_SKIP_MSG = "skipped (pip install -r requirements-trl.txt)"


def set_threads(n: int) -> None:
    """torch threads for this process (0: leave torch's default)."""
    if n:
        torch.set_num_threads(n)


def trl_available() -> bool:
    import importlib.util
    return importlib.util.find_spec("trl") is not None


def _trl_settings(cfg: BenchConfig, device: str) -> dict:
    from minipods.model import pick_dtype
    dt = {torch.float32: "float32", torch.bfloat16: "bfloat16", torch.float16: "float16"}[pick_dtype(cfg.dtype, device)]
    return dict(model=cfg.model, dtype=dt, device=device, threads=cfg.threads, seed=cfg.seed, prompts=cfg.trl_prompts,
                n=cfg.trl_n, max_new_tokens=cfg.trl_max_new_tokens, micro_batch_size=cfg.micro_batch_size,
                lora_r=cfg.lora_r, lora_alpha=cfg.lora_alpha, lr=5e-6, max_grad_norm=1.0, temperature=0.9,
                max_prompt_tokens=512, top_k=0)  # minipods samples without top-k; TRL: 0 = off


def part_trl(ctx, cfg: BenchConfig) -> dict:
    if not trl_available():
        return {"skipped": TRL_SKIP_MSG}
    import importlib.metadata
    s = _trl_settings(cfg, ctx.device)
    mp = run_worker("vs_trl:worker_minipods_step", s)
    tr = run_worker("vs_trl:worker_trl_step", s)
    out = {"settings": s, "trl_version": importlib.metadata.version("trl"), "minipods": mp, "trl": tr}
    if "error" not in mp and "error" not in tr:
        out.update(time_ratio=ratio(tr["step_s"], mp["step_s"]),
                   cpu_time_ratio=ratio(tr["step_cpu_s"], mp["step_cpu_s"]),
                   rollout_ratio=ratio(tr["rollout_s"], mp["rollout_s"]),
                   update_ratio=ratio(tr["update_s"], mp["update_s"]),
                   mem_ratio=ratio(tr["peak_delta_mb"], mp["peak_delta_mb"]),
                   peak_ratio=ratio(tr["peak_mb"], mp["peak_mb"]))
    out["notes"] = TRL_NOTES
    return out


TRL_NOTES = [
    "both: same cached HF model folder, prompts (chat-formatted strings), n, max completion length, temperature 0.9, "
    "no top-k, LoRA r/alpha/all-linear/dropout 0, dtype, torch threads, AdamW (lr 5e-6, wd 0.1, betas 0.9/0.99), "
    "grad clip 1.0, beta=0 (no reference pass), micro-batch (TRL: per_device_train_batch_size + "
    "gradient accumulation), gradient checkpointing off, no autocast; 2 steps, the 2nd timed",
    "TRL loss_type 'dapo' (its default) = token-level mean over the whole accumulated batch, the same "
    "normalisation as minipods; std-scaled group advantages in both",
    "TRL computes per-token entropy in its fused LM head every step (for its metrics) and gathers metrics; "
    "minipods does not",
    "TRL step time is on_step_end to on_step_end (includes its dataloader/callback overhead); "
    "minipods times run_step. "
    "generate = sampling + rewards + advantages (TRL: _generate_and_score_completions; minipods: run_step's "
    "rollout_s); update = the rest. cpu = process CPU time, less sensitive than wall time to other jobs on a "
    "shared CPU",
    "memory: 'peak' = the process's peak RSS (CPU, normal allocator, so it includes glibc's cached heap) or "
    "torch allocated bytes (CUDA) during the warm step; '+X' = that peak minus the memory just before the step. "
    "TRL's process also holds trl/datasets/pandas imports",
]


def rows_trl(r: dict) -> list[list[str]]:
    if "skipped" in r:
        return [["trl", "minipods vs trl.GRPOTrainer", r["skipped"]]]
    s, mp, tr = r["settings"], r["minipods"], r["trl"]
    what = f"{s['prompts']} prompts x n={s['n']}, {s['max_new_tokens']} tok, LoRA r={s['lora_r']}, {s['dtype']}"
    rows = []
    for name, x in (("minipods GRPO step", mp), (f"trl {r.get('trl_version', '')} GRPOTrainer step", tr)):
        if "error" in x:
            rows.append(["trl", f"{name} ({what})", "failed: " + x["error"][:200]])
        else:
            rows.append(["trl", f"{name} ({what})",
                         f"{fmt_s(x['step_s'])} (cpu {fmt_s(x['step_cpu_s'])}; generate {fmt_s(x['rollout_s'])} + "
                         f"update {fmt_s(x['update_s'])}), "
                         f"peak {fmt_mb(x['peak_mb'])} (+{fmt_mb(x['peak_delta_mb'])})"])
    if "time_ratio" in r:
        rows.append(["trl", "TRL / minipods: step time, wall (cpu)",
                     f"{fmt_x(r['time_ratio'])} ({fmt_x(r['cpu_time_ratio'])})"])
        rows.append(["trl", "TRL / minipods: generate phase; update phase",
                     f"{fmt_x(r['rollout_ratio'])}; {fmt_x(r['update_ratio'])}"])
        rows.append(["trl", "TRL / minipods: memory (step increase; absolute peak)",
                     f"{fmt_x(r['mem_ratio'])}; {fmt_x(r['peak_ratio'])}"])
    return rows


# ---------------------------------------------------------------- the two workers (fresh processes)
def _peak_start(device: str) -> float:
    """Reset the process's peak (memory.reset_peak) and return the memory held now, in MiB."""
    reset_peak(device)
    return torch.cuda.memory_allocated() / 2**20 if device.startswith("cuda") else rss_mb()


def _peak_since(device: str, base: float) -> dict:
    """The process's peak since _peak_start (CUDA: allocated bytes; CPU: resident set size) and its increase."""
    peak = peak_mb(device)
    return {"peak_mb": peak, "peak_delta_mb": peak - base, "memory_kind": "cuda" if device.startswith("cuda") else "rss"}


def worker_minipods_step(a: dict) -> dict:
    from minipods.data import synthetic_problems
    from minipods.model import load_policy
    from minipods.train import make_config, make_engine, run_step
    set_threads(a["threads"])
    torch.manual_seed(a["seed"])
    model, tok = load_policy(a["model"], dtype=a["dtype"], device=a["device"], lora_r=a["lora_r"],
                             lora_alpha=a["lora_alpha"])
    cfg = make_config(model=a["model"], dtype=a["dtype"], method="grpo", n=a["n"], m=a["n"],
                      prompts_per_step=a["prompts"], max_new_tokens=a["max_new_tokens"],
                      max_prompt_tokens=a["max_prompt_tokens"], temperature=a["temperature"],
                      micro_batch_size=a["micro_batch_size"], gen_batch_size=a["prompts"] * a["n"], lr=a["lr"],
                      max_grad_norm=a["max_grad_norm"], optimizer="adamw", lora_r=a["lora_r"],
                      lora_alpha=a["lora_alpha"], seed=a["seed"], data="synthetic")
    device = str(next(model.parameters()).device)
    engine = make_engine(cfg, model, device)
    items = synthetic_problems(a["prompts"], seed=a["seed"])
    load_mb = torch.cuda.memory_allocated() / 2**20 if device.startswith("cuda") else rss_mb()
    run_step(model, tok, engine, cfg, items, 1)
    base = _peak_start(device)
    t0, c0 = time.perf_counter(), time.process_time()
    row = run_step(model, tok, engine, cfg, items, 2)
    sync(device)
    dt, cpu = time.perf_counter() - t0, time.process_time() - c0
    return {"step_s": dt, "step_cpu_s": cpu, "rollout_s": row["rollout_s"], "update_s": row["update_s"],
            **_peak_since(device, base), "after_load_mb": load_mb,
            "tokens": row["tokens"],
            "process_max_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            "threads": torch.get_num_threads()}


def _trl_trainer(a: dict):
    """A trl.GRPOTrainer with the settings `a` (see _trl_settings), 2 steps on synthetic problems, and
    the rewards of minipods.rewards.total_reward."""
    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer

    from minipods.data import build_prompt, synthetic_problems
    from minipods.model import load_tokenizer, lora_config, resolve_model
    from minipods.rewards import total_reward

    path = resolve_model(a["model"])
    tok = load_tokenizer(path)
    items = synthetic_problems(a["prompts"], seed=a["seed"])
    ds = Dataset.from_list([{"prompt": build_prompt(tok, it["question"]), "gold": it["gold"]} for it in items])

    def minipods_reward(prompts, completions, gold, **kw):
        return [total_reward(c, g) for c, g in zip(completions, gold)]

    cuda = a["device"].startswith("cuda")
    B, mb = a["prompts"] * a["n"], a["micro_batch_size"]
    out_dir = tempfile.mkdtemp(prefix="minipods-bench-trl-")
    args = GRPOConfig(
        output_dir=out_dir, max_steps=2, per_device_train_batch_size=mb, gradient_accumulation_steps=B // mb,
        num_generations=a["n"], max_completion_length=a["max_new_tokens"], temperature=a["temperature"],
        top_p=1.0, top_k=a["top_k"], beta=0.0, num_iterations=1, loss_type="dapo", scale_rewards="group",
        learning_rate=a["lr"], lr_scheduler_type="constant", warmup_steps=0, weight_decay=0.1, adam_beta1=0.9,
        adam_beta2=0.99, max_grad_norm=a["max_grad_norm"], optim="adamw_torch", gradient_checkpointing=False,
        bf16=False, fp16=False, use_cpu=not cuda, model_init_kwargs={"dtype": a["dtype"]}, report_to="none",
        logging_strategy="no", save_strategy="no", disable_tqdm=True, seed=a["seed"], dataloader_num_workers=0,
        shuffle_dataset=False, log_completions=False)
    return GRPOTrainer(model=path, reward_funcs=minipods_reward, args=args, train_dataset=ds,
                       processing_class=tok, peft_config=lora_config(a["lora_r"], a["lora_alpha"], 0.0))


def _time_generation(trainer, device: str) -> dict:
    """Wrap the trainer's generation + rewards + advantages of one step in a timer; returns the dict
    whose "s" sums its seconds (the step timer resets it)."""
    gen = {"s": 0.0}
    inner = trainer._generate_and_score_completions

    def timed_generate(*a, **kw):
        t0 = time.perf_counter()
        try:
            return inner(*a, **kw)
        finally:
            sync(device)
            gen["s"] += time.perf_counter() - t0
    trainer._generate_and_score_completions = timed_generate
    return gen


def _step_timer(device: str, gen: dict, res: dict):
    """A TrainerCallback that times step 2 (from the end of step 1 to the end of step 2) into `res`:
    wall and CPU seconds, the generation share from `gen`, and the step's peak memory."""
    from transformers import TrainerCallback

    class StepTimer(TrainerCallback):
        def on_step_end(self, args, state, control, **kw):
            sync(device)
            if state.global_step == 1:
                self.base = _peak_start(device)
                self.t0, self.c0, gen["s"] = time.perf_counter(), time.process_time(), 0.0
            elif state.global_step == 2:
                res["step_s"] = time.perf_counter() - self.t0
                res["step_cpu_s"] = time.process_time() - self.c0
                res["rollout_s"] = gen["s"]
                res["update_s"] = res["step_s"] - gen["s"]
                res.update(_peak_since(device, self.base))
    return StepTimer()


def worker_trl_step(a: dict) -> dict:
    set_threads(a["threads"])
    trainer = _trl_trainer(a)
    cuda = a["device"].startswith("cuda")
    device = "cuda" if cuda else "cpu"
    load_mb = torch.cuda.memory_allocated() / 2**20 if cuda else rss_mb()
    res: dict = {}
    trainer.add_callback(_step_timer(device, _time_generation(trainer, device), res))
    trainer.train()
    if "step_s" not in res:
        raise RuntimeError("TRL did not run 2 optimizer steps")
    res.update(after_load_mb=load_mb, threads=torch.get_num_threads(),
               process_max_rss_mb=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
    return res


def main(argv=None) -> int:
    """The bench's flags; the table of rows_trl on stdout, the result as JSON in --output."""
    import json
    import os
    import sys
    from pathlib import Path

    from minipods.cli import fail
    from minipods.measure.bench import build_parser, config_from_args, validate
    from minipods.measure.common import format_table
    from minipods.measure.config import Context
    from minipods.model import default_device

    parser = build_parser("python scripts/vs_trl.py")
    parser.description = __doc__.split("\n\n")[0]  # the bench's flags, this script's job (--parts is not used)
    args = parser.parse_args(argv)
    cfg = config_from_args(args)
    try:
        validate(cfg, None)
        if (cfg.trl_prompts * cfg.trl_n) % cfg.micro_batch_size:
            raise ValueError("--trl-prompts * --trl-n must be a multiple of --micro-batch-size")
    except ValueError as e:
        return fail("python scripts/vs_trl.py", e)
    here = str(Path(__file__).resolve().parent)  # the workers import this file as `vs_trl`
    os.environ["PYTHONPATH"] = os.pathsep.join([here, os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    set_threads(cfg.threads)
    r = part_trl(Context(device=default_device() if cfg.device == "auto" else cfg.device), cfg)
    print(format_table(rows_trl(r)) + "\n\nnotes:\n" + "\n".join(f"- {n}" for n in r.get("notes", [])))
    Path(args.output).write_text(json.dumps(r, indent=1, default=float))
    print(f"\nwrote {args.output}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
