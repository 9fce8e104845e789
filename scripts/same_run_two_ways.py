"""The same small PODS run through minipods' loop and through PODSGRPOTrainer (docs/scale.md, "The same run, two ways").

SmolLM2-135M + LoRA r=16, synthetic problems, 4 questions x n=8 -> m=4 by max-variance, 64 tokens, 2 steps, CPU,
float32: the same model, LoRA, rewards, selection, advantages, loss and optimizer; only the data order and the
sampler differ. Run from the repository root: `OMP_NUM_THREADS=1 python scripts/same_run_two_ways.py` (needs
requirements-trl.txt). Writes runs/same-minipods and runs/same-trl.
"""

import argparse
import json

from datasets import Dataset

from minipods.data import build_prompt, load_task
from minipods.model import load_tokenizer, lora_config, resolve_model
from minipods.scale.trl_pods import PODSGRPOConfig, PODSGRPOTrainer, correctness, format_tags
from minipods.train import make_config, train


def main() -> None:
    cfg = make_config("small", max_steps=2, eval_every=0, max_new_tokens=64, dtype="float32", progress=False,
                      output_dir="runs/same-minipods")
    train(cfg)
    for row in map(json.loads, open("runs/same-minipods/metrics.jsonl")):
        print("minipods", {k: row[k] for k in ("step", "reward_mean", "kept_reward_mean", "zero_std_frac", "loss")})

    path = resolve_model(cfg.model)  # the same weights (the offline GGUF, as an HF folder)
    tok = load_tokenizer(path)
    items, _ = load_task(cfg.data, "train", seed=cfg.seed)
    ds = Dataset.from_list([{"prompt": build_prompt(tok, it["question"]), "gold": it["gold"]} for it in items])
    args = PODSGRPOConfig(  # TRL's batch sizes count generated rollouts: 8 generated keep 8 * m / n = 4 rows
        output_dir="runs/same-trl", num_generations=cfg.n, pods_m=cfg.m, pods_rule=cfg.rule,
        per_device_train_batch_size=cfg.micro_batch_size * cfg.n // cfg.m,
        gradient_accumulation_steps=cfg.prompts_per_step * cfg.m // cfg.micro_batch_size,
        max_steps=cfg.max_steps, max_completion_length=cfg.max_new_tokens, temperature=cfg.temperature,
        top_p=cfg.top_p, learning_rate=cfg.lr, lr_scheduler_type="constant", weight_decay=cfg.weight_decay,
        adam_beta1=cfg.adam_beta1, adam_beta2=cfg.adam_beta2, max_grad_norm=cfg.max_grad_norm, optim="adamw_torch",
        beta=cfg.beta, epsilon=cfg.clip_eps, num_iterations=cfg.update_epochs, loss_type="dapo", scale_rewards="group",
        bf16=False, gradient_checkpointing=False, use_cpu=True, seed=cfg.seed,
        report_to="none", logging_steps=1, save_strategy="no", disable_tqdm=True)
    trainer = PODSGRPOTrainer(path, [correctness, format_tags], args=args, train_dataset=ds, processing_class=tok,
                              peft_config=lora_config(cfg.lora_r, cfg.lora_alpha, cfg.lora_dropout))
    trainer.train()
    for row in trainer.state.log_history[:-1]:
        print("trl", {k: row[k] for k in ("step", "reward", "pods/kept_reward", "frac_reward_zero_std", "loss")})


if __name__ == "__main__":
    argparse.ArgumentParser(prog="python scripts/same_run_two_ways.py", description=__doc__.split("\n\n")[0]).parse_args()
    main()
