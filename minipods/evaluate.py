"""Evaluation: batched accuracy on GSM8K test questions.

Paper: test accuracy on GSM8K; the single-GPU runs sample at temperature 0.9 and average over
repeats. minipods defaults to greedy decoding (deterministic, one sample) and offers the
paper's protocol with `samples=k, temperature=0.9`.
"""

from __future__ import annotations

import math

from minipods.data import build_prompt
from minipods.rewards import extract_answer, score_completions
from minipods.rollouts import generate_rollouts


def wilson_interval(k: float, n: int, z: float = 1.96) -> tuple[float, float]:
    """95% Wilson score interval for a proportion k/n (well behaved at 0 and 1)."""
    if n == 0:
        return (0.0, 0.0)
    p = k / n
    d = 1 + z * z / n
    c = (p + z * z / (2 * n)) / d
    h = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / d
    return (max(0.0, c - h), min(1.0, c + h))


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
