"""Named settings for `python -m minipods.train --preset NAME` (and `--small`): explicit flags override.

Each preset says where its values come from; docs/training.md compares `paper` with the authors'
code setting by setting, and docs/results.md has the runs behind `small` and `laptop`."""

from minipods.model import DEFAULT_MODEL

# the laptop study's sizing (docs/results.md, "Planned study"): training seconds per arm, the shared
# evaluation grid in training seconds, and the held-out questions per evaluation
LAPTOP_LR = 2e-4
LAPTOP_BUDGET_S = 900.0
LAPTOP_EVAL_EVERY_S = 180.0
LAPTOP_EVAL_LIMIT = 100

PRESETS = {
    # CPU-sized, for SmolLM2-135M (docs/results.md has the runs and the reasons): the synthetic task (the
    # 135M model almost never solves GSM8K), 64-token completions, lr above the paper's (a ~100x shorter
    # run, a ~20x smaller model), temperature 0.7 (at 0.9 it rarely finishes a correct answer), 32 steps.
    "small": dict(model=DEFAULT_MODEL, data="synthetic", n=8, m=4, prompts_per_step=4, max_new_tokens=64,
                  max_prompt_tokens=256, temperature=0.7, lr=5e-4, max_grad_norm=1.0, lora_r=16, lora_alpha=32,
                  max_steps=32, micro_batch_size=4, eval_every=32, eval_limit=128, eval_max_new_tokens=64,
                  save_every=4, gen_batch_size=32, eval_batch_size=32, dtype="auto"),
    # The authors' single-GPU run (YixuanEvenXu/pods: config/train.yaml, trainer/maxvargrpo_trainer.py),
    # item by item; docs/training.md compares them setting by setting (no warm-up in effect, max_time 6 h).
    "paper": dict(model="Qwen/Qwen2.5-3B-Instruct", quantize="4bit", lora_r=64, lora_alpha=64, lr=5e-6,
                  optimizer="auto", adam_beta1=0.9, adam_beta2=0.99, weight_decay=0.1, max_grad_norm=0.1,
                  temperature=0.9, max_prompt_tokens=512, max_new_tokens=512, n=64, m=16, prompts_per_step=1,
                  loss_type="grpo", skip_silent=False, beta=0.0, max_steps=8000, budget_s=21600.0,
                  eval_every_s=1800.0, eval_limit=1319, micro_batch_size=4, gradient_checkpointing=True, data="gsm8k"),
    # The paper's step at CPU scale, the planned study (docs/results.md): one prompt per step, PODS n = 16
    # -> m = 4 (as 64 -> 16), the authors' loss and pricing, an equal training-time budget per arm, one
    # evaluation time grid; model, task, lengths, LoRA and temperature are --small's.
    "laptop": dict(model=DEFAULT_MODEL, data="synthetic", n=16, m=4, prompts_per_step=1, max_new_tokens=64,
                   max_prompt_tokens=256, temperature=0.7, lr=LAPTOP_LR, max_grad_norm=0.1, lora_r=16,
                   lora_alpha=32, loss_type="grpo", skip_silent=False, max_steps=1_000_000,
                   budget_s=LAPTOP_BUDGET_S, eval_every_s=LAPTOP_EVAL_EVERY_S, eval_limit=LAPTOP_EVAL_LIMIT,
                   eval_max_new_tokens=64, save_every=25, micro_batch_size=4, gen_batch_size=32,
                   eval_batch_size=32, dtype="auto"),
    # The paper's recipe scaled to an 8-12 GB card (docs/gpu.md): the 1.5B model in 4 bits, n=16 -> m=4,
    # micro-batch 2; LoRA, optimiser, lengths and sampling as in the paper.
    "consumer": dict(model="Qwen/Qwen2.5-1.5B-Instruct", quantize="4bit", lora_r=64, lora_alpha=64, lr=5e-6,
                     optimizer="auto", adam_beta1=0.9, adam_beta2=0.99, weight_decay=0.1, max_grad_norm=0.1,
                     temperature=0.9, max_prompt_tokens=512, max_new_tokens=512, n=16, m=4, prompts_per_step=8,
                     max_steps=400, eval_every=25, eval_limit=500, micro_batch_size=2, gen_batch_size=32,
                     eval_batch_size=32, gradient_checkpointing=True, data="gsm8k"),
}
# A class's study (docs/class_study.md): `laptop`'s step, one student's seed (grpo and pods_max_variance, 5
# evaluations each) sized to ~25 min on 2 cores; lr 2e-4 chosen by the pilots (seeds 100, 101), never in a study.
PRESETS["class"] = dict(PRESETS["laptop"], lr=LAPTOP_LR, budget_s=600.0, eval_every_s=150.0, eval_limit=64)
