"""Evaluation: batched accuracy on GSM8K test questions.

Paper: test accuracy on GSM8K; the single-GPU runs sample at temperature 0.9 and average over
repeats. minipods defaults to greedy decoding (deterministic, one sample) and offers the
paper's protocol with `samples=k, temperature=0.9`.

CLI: `python -m minipods.evaluate [--model M] [--adapter DIR] [--limit N] [--samples k --temperature T]`
prints accuracy (95% Wilson interval) and the format rate, and writes one JSON row per question
(question, gold, completions, extracted answers, correct fraction) to `--output` (eval.jsonl).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

import torch

from minipods.data import build_prompt
from minipods.plots import wilson_interval  # torch-free home of the interval; also used by the figures
from minipods.rewards import extract_answer, score_completions
from minipods.rollouts import generate_rollouts


def evaluate_items(model, tokenizer, items: list[dict], max_new_tokens: int = 256, batch_size: int = 32,
                   samples: int = 1, temperature: float = 0.0, max_prompt_tokens: int | None = None,
                   progress: bool = False) -> dict:
    """Accuracy of `model` on `items` ({question, gold}); greedy when temperature == 0.

    Returns accuracy (mean over questions of the mean correctness of their samples), its 95%
    interval, format_rate (completions with all four tags well placed), seconds, and per-question
    `rows` (question, gold, completions, extracted answers, correct fraction).
    """
    if not items:
        raise ValueError("no evaluation items")
    greedy = temperature <= 0
    if greedy and samples != 1:
        raise ValueError("greedy decoding gives one sample per question; use temperature > 0 for samples > 1")
    prompts = [build_prompt(tokenizer, it["question"]) for it in items]
    ro = generate_rollouts(model, tokenizer, prompts, samples, max_new_tokens=max_new_tokens,
                           temperature=temperature if not greedy else 1.0, do_sample=not greedy,
                           batch_size=batch_size, max_prompt_tokens=max_prompt_tokens, progress=progress)
    golds = [it["gold"] for it in items for _ in range(samples)]
    sc = score_completions(ro.texts, golds)
    rows, total = [], 0.0
    full_format = 0.1 - 1e-9
    for q, it in enumerate(items):
        sl = slice(q * samples, (q + 1) * samples)
        corr = sc["correct"][sl]
        total += sum(corr) / samples
        rows.append({"question": it["question"], "gold": it["gold"], "completions": ro.texts[sl],
                     "extracted": [extract_answer(t) for t in ro.texts[sl]], "correct": sum(corr) / samples})
    acc = total / len(items)
    lo, hi = wilson_interval(acc * len(items), len(items))
    return {"accuracy": acc, "ci95": (lo, hi), "n": len(items), "samples": samples,
            "format_rate": sum(f >= full_format for f in sc["format"]) / len(sc["format"]),
            "seconds": ro.seconds, "tokens": ro.num_tokens, "rows": rows}


# ---------------------------------------------------------------- CLI: python -m minipods.evaluate
class _Parser(argparse.ArgumentParser):
    """argparse, but a bad argument is one line on stderr and exit status 2 (no usage dump)."""

    def error(self, message):
        print(f"{self.prog}: error: {message}", file=sys.stderr)
        sys.exit(2)


def build_parser() -> argparse.ArgumentParser:
    from minipods.model import DEFAULT_MODEL

    p = _Parser(prog="python -m minipods.evaluate",
                description="Accuracy of a model (optionally with a trained LoRA adapter) on GSM8K test questions.",
                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--model", default=None,
                   help=f"hub id, local HF folder, .gguf file or {DEFAULT_MODEL!r} (default: the adapter's run model "
                        f"if --adapter is a run folder, else {DEFAULT_MODEL})")
    p.add_argument("--adapter", default=None,
                   help="saved LoRA adapter folder (or a run folder holding adapter/ or checkpoint/adapter)")
    p.add_argument("--data", default="gsm8k", choices=["gsm8k", "synthetic"], help="task")
    p.add_argument("--data-dir", default=None, help="folder with GSM8K test.jsonl (else $MINIPODS_GSM8K_DIR, else the hub)")
    p.add_argument("--split", default="test", choices=["test", "train"], help="data split")
    p.add_argument("--limit", type=int, default=100, help="evaluate the first N questions (0 = all)")
    p.add_argument("--samples", type=int, default=1, help="samples per question (k > 1 needs --temperature > 0)")
    p.add_argument("--temperature", type=float, default=None,
                   help="0 = greedy; default: greedy with --samples 1, 0.9 (the paper's protocol) with --samples > 1")
    p.add_argument("--max-new-tokens", type=int, default=256, help="completion length limit")
    p.add_argument("--max-prompt-tokens", type=int, default=512, help="prompts are left-truncated to this length")
    p.add_argument("--batch-size", type=int, default=32, help="sequences per generate() call")
    p.add_argument("--seed", type=int, default=0, help="sampling seed (and the synthetic task's seed)")
    p.add_argument("--quantize", default="none", choices=["none", "4bit"], help="load the base model in 4 bits")
    p.add_argument("--dtype", default="auto", choices=["auto", "float32", "bfloat16", "float16"], help="weights dtype")
    p.add_argument("--device", default="auto", help="auto | cpu | cuda | cuda:N")
    p.add_argument("--output", default="eval.jsonl", help="one JSON row per question ('' = do not write)")
    p.add_argument("--progress", action=argparse.BooleanOptionalAction, default=True, help="progress bar")
    return p


def resolve_adapter(path: str) -> tuple[Path, dict | None]:
    """The adapter folder for `path` (an adapter, or a run folder with adapter/ or checkpoint/adapter),
    and the run's config.json (if there is one) so the matching base model can be used."""
    p = Path(path).expanduser()
    for cand in (p, p / "adapter", p / "checkpoint" / "adapter"):
        if (cand / "adapter_config.json").is_file():
            run_cfg = None
            for run in (cand.parent, cand.parent.parent):
                if (run / "config.json").is_file():
                    try:
                        run_cfg = json.loads((run / "config.json").read_text())
                    except (OSError, ValueError):
                        run_cfg = None
                    break
            return cand, run_cfg if isinstance(run_cfg, dict) and "method" in run_cfg else None
    raise ValueError(f"--adapter {path}: no adapter_config.json there (nor in adapter/ or checkpoint/adapter/)")


def main(argv=None) -> int:
    from minipods.data import DataNotFoundError, load_task
    from minipods.model import DEFAULT_MODEL, ModelNotFoundError, default_device, load_policy, resolve_model

    args = build_parser().parse_args(argv)
    prog = "minipods.evaluate"

    def fail(msg: str) -> int:
        print(f"{prog}: error: {msg}", file=sys.stderr)
        return 2

    if args.limit < 0:
        return fail(f"--limit must be >= 0, got {args.limit}")
    for name in ("samples", "max_new_tokens", "max_prompt_tokens", "batch_size"):
        if getattr(args, name) < 1:
            return fail(f"--{name.replace('_', '-')} must be >= 1, got {getattr(args, name)}")
    temperature = args.temperature if args.temperature is not None else (0.9 if args.samples > 1 else 0.0)
    if not math.isfinite(temperature) or temperature < 0:
        return fail(f"--temperature must be >= 0, got {temperature}")
    if temperature == 0 and args.samples > 1:
        return fail("greedy decoding (--temperature 0) gives one sample per question; use --temperature > 0 with --samples > 1")
    try:
        adapter, run_cfg = resolve_adapter(args.adapter) if args.adapter else (None, None)
        model_name = args.model or (run_cfg or {}).get("model") or DEFAULT_MODEL
        if model_name != DEFAULT_MODEL:
            resolve_model(model_name)  # a missing path fails here, before any work
        items, source = load_task(args.data, args.split, args.data_dir, limit=args.limit or None, seed=args.seed)
    except (ValueError, ModelNotFoundError, DataNotFoundError) as e:
        return fail(str(e).splitlines()[0] if str(e).strip() else type(e).__name__)
    if not items:
        return fail(f"no {args.split} questions in {source}")

    device = default_device() if args.device == "auto" else args.device
    try:
        model, tok = load_policy(model_name, quantize=args.quantize, dtype=args.dtype, device=device,
                                 adapter=str(adapter) if adapter else None, lora=adapter is not None)
    except (ValueError, OSError) as e:  # OSError: ModelNotFoundError, or a hub id that cannot be fetched
        return fail(str(e).splitlines()[0] if str(e).strip() else type(e).__name__)
    torch.manual_seed(args.seed)
    res = evaluate_items(model, tok, items, max_new_tokens=args.max_new_tokens, batch_size=args.batch_size,
                         samples=args.samples, temperature=temperature, max_prompt_tokens=args.max_prompt_tokens,
                         progress=args.progress)
    if args.output:
        out = Path(args.output)
        out.parent.mkdir(parents=True, exist_ok=True)
        with out.open("w") as f:
            for i, row in enumerate(res["rows"]):
                f.write(json.dumps({"index": i, **row}) + "\n")
    decoding = "greedy" if temperature == 0 else f"sampled at T={temperature:g}, {args.samples} sample(s) per question, averaged"
    lo, hi = res["ci95"]
    n_right = sum(r["correct"] for r in res["rows"])
    print(f"model: {model_name}" + (f" + adapter {adapter}" if adapter else ""))
    print(f"data: {source} [{args.split}], {res['n']} questions; decoding: {decoding}; max_new_tokens={args.max_new_tokens}")
    print(f"accuracy: {res['accuracy']:.4f} ({n_right:g}/{res['n']})  95% CI [{lo:.4f}, {hi:.4f}]")
    print(f"format rate: {res['format_rate']:.4f}  (completions with all four tags well placed)")
    print(f"time: {res['seconds']:.1f} s generation, {res['tokens']} tokens")
    if args.output:
        wrong = sum(r["correct"] < 1 for r in res["rows"])
        print(f"rows: {args.output} ({wrong} question(s) not always right)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
