"""GSM8K on TRL with PODS: `python scripts/trl_pods.py` (or `accelerate launch ... scripts/trl_pods.py`).

minipods' prompts and rewards on PODSGRPOTrainer (minipods.scale.trl_pods); every PODSGRPOConfig field is a
flag (`--pods_m` or `--pods-m`), plus ScriptArguments' --model --data --data_dir --lora_r --lora_alpha.
Settings, the 8-GPU command and what differs from `python -m minipods.train`: docs/scale.md.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field

from datasets import Dataset
from transformers import HfArgumentParser

from minipods.cli import Parser, fail
from minipods.data import build_prompt, load_task
from minipods.model import load_tokenizer, lora_config, resolve_model
from minipods.scale.trl_pods import PODSGRPOConfig, PODSGRPOTrainer, correctness, format_tags

PROG = "python scripts/trl_pods.py"


@dataclass
class ScriptArguments:
    """The task and adapter settings (the rest is PODSGRPOConfig)."""
    model: str = field(default="Qwen/Qwen2.5-3B-Instruct",
                       metadata={"help": "hub id, local HF folder, .gguf file, or 'smollm2-135m-instruct'"})
    data: str = field(default="gsm8k", metadata={"help": "gsm8k | synthetic (seeded easy word problems)"})
    data_dir: str | None = field(default=None, metadata={"help": "GSM8K folder (else $MINIPODS_GSM8K_DIR, else hub)"})
    lora_r: int = field(default=64, metadata={"help": "LoRA rank (paper: 64)"})
    lora_alpha: int = field(default=64, metadata={"help": "LoRA alpha (paper: 64)"})


def main(argv=None) -> int:
    class ArgParser(HfArgumentParser):  # TRL's flags (--pods_m, --num_generations, ...), minipods' one-line errors
        error = Parser.error

    try:
        parser = ArgParser((ScriptArguments, PODSGRPOConfig), prog=PROG)
        script, args = parser.parse_args_into_dataclasses(argv)
    except ValueError as e:  # an unworkable PODS/TRL combination
        return fail(PROG, e)
    path = resolve_model(script.model)
    tok = load_tokenizer(path)
    items, source = load_task(script.data, "train", script.data_dir, seed=args.seed)
    # Prompts are chat-templated text, exactly what minipods.train feeds `generate`; `gold` reaches the rewards.
    ds = Dataset.from_list([{"prompt": build_prompt(tok, it["question"]), "gold": it["gold"]} for it in items])
    trainer = PODSGRPOTrainer(path, [correctness, format_tags], args=args, train_dataset=ds, processing_class=tok,
                              peft_config=lora_config(script.lora_r, script.lora_alpha))
    if trainer.accelerator.is_main_process:
        print(f"data: {source} ({len(ds)} questions); n={args.num_generations} -> m={args.pods_m} "
              f"({args.pods_rule}); {trainer.accelerator.num_processes} process(es)")
    trainer.train(resume_from_checkpoint=args.resume_from_checkpoint)
    trainer.save_model(f"{args.output_dir}/adapter")
    return 0


if __name__ == "__main__":
    sys.exit(main())
