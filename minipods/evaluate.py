"""Evaluation: batched accuracy on GSM8K test questions (`python -m minipods.evaluate`).

Paper: GSM8K test accuracy, sampled at temperature 0.9 and averaged over repeats (here `samples=k`);
minipods defaults to greedy decoding; minipods.stats compares two evaluations question by question."""

from __future__ import annotations

import json
import math
import sys
from dataclasses import dataclass
from pathlib import Path

import torch

from minipods import rollouts
from minipods.checkpoint import check_adapter, write_rows
from minipods.cli import Parser, add_dataclass_args, check_choices, check_positive, fail, overrides, setting
from minipods.data import DataNotFoundError, build_prompt, check_level, load_task
from minipods.fast.rollouts import generate_rollouts as fast_generate_rollouts
from minipods.model import DEFAULT_MODEL, QUANTIZE, ModelNotFoundError, load_policy, resolve_model
from minipods.rewards import extract_answer, is_full_format, score_completions, strict_correct
from minipods.stats import wilson_interval
from minipods.twins import arch as _twins  # noqa: F401  (registers the random: model names)


def evaluate_items(model, tokenizer, items: list[dict], max_new_tokens: int = 256, batch_size: int = 32,
                   samples: int = 1, temperature: float = 0.0, max_prompt_tokens: int | None = None,
                   progress: bool = False, fast: bool = True, what: str = "held-out questions") -> dict:
    """Accuracy of `model` on `items` ({question, gold}), greedy when temperature == 0: accuracy (lenient) and
    strict_accuracy, with ci95 / strict_ci95, format_rate, seconds, tokens, and per-question `rows` (question,
    gold, completions, extracted, correct, strict). batch_size bounds memory (greedy results do not depend on it).
    progress: one bar, "evaluating N `what`"."""
    from tqdm.auto import tqdm
    if not items:
        raise ValueError("no evaluation items")
    greedy = temperature <= 0
    if greedy and samples != 1:
        raise ValueError("greedy decoding gives one sample per question; use temperature > 0 for samples > 1")
    prompts = [build_prompt(tokenizer, it["question"]) for it in items]
    generate = fast_generate_rollouts if fast else rollouts.generate_rollouts
    texts, seconds, tokens = [], 0.0, 0
    per_call = max(1, batch_size // samples)  # questions per call: at most batch_size sequences in flight
    bar = tqdm(total=len(items), desc=f"evaluating {len(items)} {what}", unit="question", disable=not progress,
               leave=False)
    for s in range(0, len(prompts), per_call):
        ro = generate(model, tokenizer, prompts[s:s + per_call], samples, max_new_tokens=max_new_tokens,
                      temperature=temperature if not greedy else 1.0, do_sample=not greedy,
                      batch_size=batch_size, max_prompt_tokens=max_prompt_tokens)
        texts, seconds, tokens = texts + ro.texts, seconds + ro.seconds, tokens + ro.num_tokens
        bar.update(len(ro.texts) // samples)
    bar.close()
    golds = [it["gold"] for it in items for _ in range(samples)]
    sc = score_completions(texts, golds)
    strict = [strict_correct(t, g) for t, g in zip(texts, golds)]
    rows = []
    for q, it in enumerate(items):
        sl = slice(q * samples, (q + 1) * samples)
        rows.append({"question": it["question"], "gold": it["gold"], "completions": texts[sl],
                     "extracted": [extract_answer(t) for t in texts[sl]],
                     "correct": sum(sc["correct"][sl]) / samples, "strict": sum(strict[sl]) / samples})
    acc, strict_acc = sum(r["correct"] for r in rows) / len(items), sum(r["strict"] for r in rows) / len(items)
    return {"accuracy": acc, "ci95": wilson_interval(acc * len(items), len(items)),
            "strict_accuracy": strict_acc, "strict_ci95": wilson_interval(strict_acc * len(items), len(items)),
            "n": len(items), "samples": samples,
            "format_rate": sum(is_full_format(f) for f in sc["format"]) / len(sc["format"]),
            "seconds": seconds, "tokens": tokens, "rows": rows}


def evaluate_to_file(model, tokenizer, items: list[dict], path: str | Path, **kw) -> dict:
    """`evaluate_items`, its rows written atomically to `path` ({index, gold, pred, correct, strict}); returns
    a training row's eval_accuracy, eval_strict_accuracy, eval_format_rate, eval_s, eval_n."""
    res = evaluate_items(model, tokenizer, items, **kw)
    write_rows(path, [{"index": i, "gold": r["gold"], "pred": r["extracted"][0], "correct": int(r["correct"]),
                       "strict": int(r["strict"])} for i, r in enumerate(res["rows"])])
    return {"eval_accuracy": res["accuracy"], "eval_strict_accuracy": res["strict_accuracy"],
            "eval_format_rate": res["format_rate"], "eval_s": res["seconds"], "eval_n": res["n"]}


# ---------------------------------------------------------------- CLI: python -m minipods.evaluate
@dataclass
class EvalConfig:
    """Settings of `python -m minipods.evaluate` (each field is a flag)."""
    model: str | None = setting(None, "hub id, local HF folder, .gguf file or 'smollm2-135m-instruct' (None: the "
                                      "adapter's run model if --adapter is a run folder, else the offline default)")
    adapter: str | None = setting(None, "saved LoRA adapter folder (or a run folder with adapter/ or checkpoint/adapter)")
    data: str = setting("gsm8k", "task: gsm8k | synthetic")
    data_dir: str | None = setting(None, "folder with GSM8K test.jsonl (else $MINIPODS_GSM8K_DIR, else the hub)")
    synthetic_level: int = setting(1, "synthetic task difficulty: 0, 1 or 2 (as in training)")
    split: str = setting("test", "data split: test | train")
    limit: int = setting(100, "evaluate the first N questions (0 = all)")
    samples: int = setting(1, "samples per question (k > 1 needs --temperature > 0)")
    temperature: float | None = setting(None, "0 = greedy; None: greedy with --samples 1, 0.9 (the paper's "
                                              "protocol) with --samples > 1")
    max_new_tokens: int = setting(256, "completion length limit")
    max_prompt_tokens: int = setting(512, "prompts are left-truncated to this length")
    batch_size: int = setting(32, "sequences in flight (batch_size // samples questions at a time): bounds memory")
    seed: int = setting(0, "sampling seed (and the synthetic task's seed)")
    quantize: str = setting("none", "none | 4bit: load the base model in 4 bits (not given: as the --adapter run trained)")
    dtype: str = setting("auto", "auto | float32 | bfloat16 | float16: weights dtype (not given: as the --adapter run)")
    device: str = setting("auto", "auto | cpu | cuda | cuda:N")
    output: str = setting("eval.jsonl", "one JSON row per question ('' = do not write)")
    progress: bool = setting(True, "progress bar")
    fast: bool = setting(True, "roll out with the fast engine (minipods.fast); --no-fast: the plain reference")

    def __post_init__(self):
        check_choices(self, {"data": ("gsm8k", "synthetic"), "split": ("test", "train"), "quantize": QUANTIZE,
                             "dtype": ("auto", "float32", "bfloat16", "float16")})
        check_level(self.synthetic_level)
        check_positive(self, ("samples", "max_new_tokens", "max_prompt_tokens", "batch_size"))
        if self.limit < 0:
            raise ValueError(f"--limit must be >= 0, got {self.limit}")
        if self.temperature is None:
            self.temperature = 0.9 if self.samples > 1 else 0.0
        if not math.isfinite(self.temperature) or self.temperature < 0:
            raise ValueError(f"--temperature must be >= 0, got {self.temperature}")
        if self.temperature == 0 and self.samples > 1:
            raise ValueError("greedy decoding (--temperature 0) gives one sample per question; use "
                             "--temperature > 0 with --samples > 1")


def resolve_adapter(path: str) -> tuple[Path, dict | None]:
    """(adapter folder, the run's config.json or None) for an adapter or a run folder."""
    p = Path(path).expanduser()
    for cand in (p, p / "adapter", p / "checkpoint" / "adapter"):
        if (cand / "adapter_config.json").is_file():
            check_adapter(cand)  # safetensors only: a pickled weights file is refused, never loaded
            run = next((r for r in (cand.parent, cand.parent.parent) if (r / "config.json").is_file()), None)
            try:
                run_cfg = json.loads((run / "config.json").read_text()) if run else None
            except (OSError, ValueError):
                run_cfg = None
            return cand, run_cfg if isinstance(run_cfg, dict) and "method" in run_cfg else None
    raise ValueError(f"--adapter {path}: no adapter_config.json there (nor in adapter/ or checkpoint/adapter/)")


def main(argv=None) -> int:
    try:
        parser = Parser(prog="python -m minipods.evaluate", description="Accuracy of a model (optionally with a "
                        "trained LoRA adapter) on GSM8K test questions.")
        add_dataclass_args(parser, EvalConfig)
        given = overrides(parser.parse_args(argv), EvalConfig)
        cfg = EvalConfig(**given)
        adapter, run_cfg = resolve_adapter(cfg.adapter) if cfg.adapter else (None, None)
        # the base the adapter was trained on (a QLoRA adapter on a 16-bit base scores differently), unless given
        base = {k: given.get(k, (run_cfg or {}).get(k, getattr(cfg, k))) for k in ("model", "quantize", "dtype")}
        model_name = base["model"] or DEFAULT_MODEL
        if model_name != DEFAULT_MODEL:
            resolve_model(model_name)  # a missing path fails here, before any work
        items, source = load_task(cfg.data, cfg.split, cfg.data_dir, limit=cfg.limit or None, seed=cfg.seed,
                                  level=cfg.synthetic_level)
        if not items:
            raise ValueError(f"no {cfg.split} questions in {source}")
        model, tok = load_policy(model_name, quantize=base["quantize"], dtype=base["dtype"], device=cfg.device,
                                 adapter=str(adapter) if adapter else None, lora=adapter is not None)
    except (ValueError, OSError, ModelNotFoundError, DataNotFoundError) as e:
        return fail("minipods.evaluate", e)  # OSError: also a hub id that cannot be fetched
    torch.manual_seed(cfg.seed)
    res = evaluate_items(model, tok, items, max_new_tokens=cfg.max_new_tokens, batch_size=cfg.batch_size,
                         samples=cfg.samples, temperature=cfg.temperature, max_prompt_tokens=cfg.max_prompt_tokens,
                         progress=cfg.progress, fast=cfg.fast,
                         what="held-out questions" if cfg.split == "test" else "training questions")
    if cfg.output:
        write_rows(cfg.output, [{"index": i, **row} for i, row in enumerate(res["rows"])])
    decoding = ("greedy" if cfg.temperature == 0 else
                f"sampled at T={cfg.temperature:g}, {cfg.samples} sample(s) per question, averaged")
    print(f"model: {model_name} (quantize {base['quantize']}, dtype {base['dtype']})" +
          (f" + adapter {adapter}" if adapter else ""))
    print(f"data: {source} [{cfg.split}], {res['n']} questions; decoding: {decoding}; max_new_tokens={cfg.max_new_tokens}")
    for label, acc, ci, key, why in (
            ("accuracy", "accuracy", "ci95", "correct", "lenient: the last number counts, as the training reward grades"),
            ("strict accuracy", "strict_accuracy", "strict_ci95", "strict",
             "only an answer inside one well-formed <answer> block counts")):
        lo, hi = res[ci]
        print(f"{label}: {res[acc]:.4f} ({sum(r[key] for r in res['rows']):g}/{res['n']})  95% CI [{lo:.4f}, {hi:.4f}]  ({why})")
    print(f"format rate: {res['format_rate']:.4f}  (completions with all four tags well placed)")
    print(f"time: {res['seconds']:.1f} s generation, {res['tokens']} tokens")
    if cfg.output:
        wrong = sum(r["correct"] < 1 for r in res["rows"])
        print(f"rows: {cfg.output} ({wrong} question(s) not always right)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
