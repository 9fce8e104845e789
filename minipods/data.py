"""GSM8K data, prompts, and a synthetic fallback task.

Paper: the single-GPU experiments train on GSM8K (train split) and report accuracy on the
GSM8K test split; the policy is asked to reason and then give its final answer inside
`<answer>...</answer>` tags (Section 5 / Appendix: single-GPU setting). The seeded synthetic word
problems are not from the paper: an offline stand-in, easy enough for a 135M model to get reward."""

from __future__ import annotations

import json
import os
import random
import sys
from pathlib import Path

from minipods.rewards import normalize_number

HUB_DATASET = ("openai/gsm8k", "main")  # the real hub path; used only when no local files are given
ENV_DIR = "MINIPODS_GSM8K_DIR"
SPLITS = ("train", "test")

SYSTEM_PROMPT = (
    "You are a careful math tutor. Solve the problem step by step. "
    "Respond in the following format:\n"
    "<reasoning>\n...\n</reasoning>\n<answer>\nthe final number only\n</answer>"
)


class DataNotFoundError(FileNotFoundError):
    """GSM8K could not be found by any of the three routes."""


def parse_gold(answer: str, where: str) -> str:
    """The final answer after the last `####`, normalised (`1,080` -> `1080`, sign kept)."""
    if "####" not in answer:
        raise ValueError(f"{where}: reference answer has no '####' final-answer marker")
    raw = answer.rsplit("####", 1)[1].strip()
    gold = normalize_number(raw)
    if gold is None:
        raise ValueError(f"{where}: final answer {raw!r} after '####' is not a number")
    return gold


def _make_item(row: object, where: str) -> dict:
    """{question, answer, gold} from one GSM8K row; ValueError naming `where` for a bad row."""
    if not isinstance(row, dict):
        raise ValueError(f"{where}: expected a JSON object, got {type(row).__name__}")
    for key in ("question", "answer"):
        if key not in row:
            raise ValueError(f"{where}: missing key {key!r}")
        if not isinstance(row[key], str):
            raise ValueError(f"{where}: key {key!r} is not a string")
    return {"question": row["question"], "answer": row["answer"], "gold": parse_gold(row["answer"], where)}


def read_jsonl(path: str | os.PathLike, limit: int | None = None) -> list[dict]:
    """Read an official GSM8K jsonl file; every bad line raises ValueError naming file:line."""
    path = Path(path)
    items = []
    with path.open(encoding="utf-8") as f:
        for lineno, line in enumerate(f, start=1):
            if limit is not None and len(items) >= limit:
                break
            if not line.strip():
                continue
            where = f"{path}:{lineno}"
            try:
                row = json.loads(line)
            except json.JSONDecodeError as e:
                raise ValueError(f"{where}: invalid JSON ({e.msg})") from None
            items.append(_make_item(row, where))
    return items


def load_gsm8k(split: str = "train", data_dir: str | os.PathLike | None = None, limit: int | None = None) -> list[dict]:
    """GSM8K `split` as {"question", "answer", "gold"} dicts in file order (the first `limit`), from
    `data_dir`, else $MINIPODS_GSM8K_DIR, else the hub dataset (cached by `datasets`)."""
    if split not in SPLITS:
        raise ValueError(f"unknown split {split!r}; expected one of {SPLITS}")
    if limit is not None and (not isinstance(limit, int) or limit < 0):
        raise ValueError(f"limit must be a non-negative int or None, got {limit!r}")
    for d in (data_dir, os.environ.get(ENV_DIR) or None):
        if d is None:
            continue
        path = Path(d) / f"{split}.jsonl"
        if not path.is_file():
            raise DataNotFoundError(f"GSM8K file not found: {path} (from {'data_dir' if d is data_dir else ENV_DIR})")
        return read_jsonl(path, limit)
    try:
        from datasets import load_dataset

        ds = load_dataset(*HUB_DATASET, split=split)
    except Exception as e:  # no network, no cache, no datasets package...
        raise DataNotFoundError(
            "GSM8K not found. Provide it one of three ways: (1) pass data_dir=/path/to/gsm8k (or --data-dir) "
            f"holding the official train.jsonl/test.jsonl; (2) set {ENV_DIR}=/path/to/gsm8k; (3) let `datasets` "
            f"download {HUB_DATASET[0]!r} (needs network once). Hub error: {type(e).__name__}: {e}") from None
    rows = ds if limit is None else ds.select(range(min(limit, len(ds))))
    return [_make_item(dict(r), f"{HUB_DATASET[0]}[{split}][{i}]") for i, r in enumerate(rows)]


# ---------------------------------------------------------------- synthetic task
# Seeded, GSM8K-shaped word problems (one or two arithmetic steps, by level) with answers computed here.
_NAMES = ["Ava", "Ben", "Chloe", "Dev", "Emma", "Finn", "Grace", "Hugo", "Iris", "Jon", "Kai", "Lena"]
_THINGS = ["apples", "books", "marbles", "stickers", "pencils", "cookies", "cards", "shells"]


def _item(q: str, steps: str, ans: int) -> dict:
    return {"question": q, "answer": f"{steps}\n#### {ans}", "gold": str(ans)}


def _gets_more(name: str, other: str, thing: str, a: int, b: int) -> dict:
    q = f"{name} has {a} {thing}. {other} gives {name} {b} more {thing}. How many {thing} does {name} have now?"
    return _item(q, f"{a} + {b} = {a + b}", a + b)


def _gives_away(name: str, other: str, thing: str, a: int, b: int) -> dict:
    q = f"{name} has {a} {thing} and gives {b} of them to {other}. How many {thing} does {name} have left?"
    return _item(q, f"{a} - {b} = {a - b}", a - b)


def _synthetic_easy(rng: random.Random) -> dict:
    """Level 0: one addition or subtraction of single-digit numbers."""
    name, other = rng.sample(_NAMES, 2)
    thing = rng.choice(_THINGS)
    a, b = rng.randint(1, 9), rng.randint(1, 9)
    return _gets_more(name, other, thing, a, b) if rng.randrange(2) == 0 else _gives_away(name, other, thing, a + b, b)


def _synthetic_one(rng: random.Random) -> dict:
    """Level 1: one step (+, -, *, /), numbers up to 40."""
    name, other = rng.sample(_NAMES, 2)
    thing = rng.choice(_THINGS)
    kind = rng.randrange(4)
    a, b = rng.randint(2, 40), rng.randint(2, 20)
    if kind == 0:
        return _gets_more(name, other, thing, a, b)
    if kind == 1:
        return _gives_away(name, other, thing, a + b, b)  # a + b: the result stays positive
    if kind == 2:
        a, b = rng.randint(2, 12), rng.randint(2, 12)
        q = f"{name} buys {a} bags with {b} {thing} in each bag. How many {thing} does {name} buy in total?"
        return _item(q, f"{a} * {b} = {a * b}", a * b)
    b = rng.randint(2, 9)
    a = b * rng.randint(2, 12)
    q = f"{name} shares {a} {thing} equally among {b} friends. How many {thing} does each friend get?"
    return _item(q, f"{a} / {b} = {a // b}", a // b)


def _synthetic_two_step(rng: random.Random) -> dict:
    """Level 2: two dependent steps (the first result feeds the second), numbers up to 40."""
    name, other = rng.sample(_NAMES, 2)
    thing = rng.choice(_THINGS)
    a = rng.randint(2, 40)
    if rng.randrange(2) == 0:
        b, c = rng.randint(2, 9), rng.randint(2, 9)
        q = (f"{name} has {a} {thing}. {name} buys {b} bags with {c} {thing} in each bag. "
             f"How many {thing} does {name} have now?")
        return _item(q, f"{b} * {c} = {b * c}\n{a} + {b * c} = {a + b * c}", a + b * c)
    b, c = rng.randint(1, a - 1), rng.randint(2, 20)
    q = (f"{name} has {a} {thing} and gives {b} of them to {other}. Then {other} gives {name} {c} {thing}. "
         f"How many {thing} does {name} have now?")
    return _item(q, f"{a} - {b} = {a - b}\n{a - b} + {c} = {a - b + c}", a - b + c)


SYNTHETIC_LEVELS = {0: _synthetic_easy, 1: _synthetic_one, 2: _synthetic_two_step}


def check_level(level) -> int:
    """`level` if it is a synthetic difficulty level, else ValueError naming the flag."""
    if level not in SYNTHETIC_LEVELS:
        *first, last = sorted(SYNTHETIC_LEVELS)
        raise ValueError(f"--synthetic-level must be {', '.join(map(str, first))} or {last}, got {level!r}")
    return level


SYNTHETIC_TRAIN_SIZE = 2000  # questions in the synthetic train split (and in a test split without a limit)


def synthetic_problems(n: int, seed: int = 0, level: int = 1) -> list[dict]:
    """`n` seeded GSM8K-style problems of difficulty `level`, shaped as `load_gsm8k`'s items."""
    if not isinstance(n, int) or n < 0:
        raise ValueError(f"n must be a non-negative int, got {n!r}")
    check_level(level)
    rng = random.Random(seed)
    return [SYNTHETIC_LEVELS[level](rng) for _ in range(n)]


def synthetic_split(split: str, limit: int | None = None, seed: int = 0, level: int = 1) -> list[dict]:
    """The synthetic train or test split; the test split (another seed) skips every question of the train
    split of the same seed and level, so held-out questions are never trained on."""
    n = limit if limit is not None else SYNTHETIC_TRAIN_SIZE
    if split == "train":
        return synthetic_problems(n, seed=seed, level=level)
    train = {it["question"] for it in synthetic_problems(SYNTHETIC_TRAIN_SIZE, seed=seed, level=level)}
    rng, out = random.Random(seed + 10_007), []
    for _ in range(100 * n + 1000):  # bounded: every level has far more questions than this needs
        if len(out) == n:
            break
        it = SYNTHETIC_LEVELS[level](rng)
        if it["question"] not in train:
            out.append(it)
    return out


# printed on stderr, not a Python warning: no file:line, not silenced by warning filters
SYNTHETIC_NOTICE = "minipods: using the SYNTHETIC word-problem task, not GSM8K: {why}. Results are not comparable with the paper."
WHY_CHOSEN = ("chosen by --data synthetic (the CPU presets' task, small, laptop and class: SmolLM2-135M almost never "
              "solves GSM8K, so GRPO would see no reward signal)")


def load_task(name: str = "gsm8k", split: str = "train", data_dir=None, limit: int | None = None,
              seed: int = 0, fallback: bool = True, notice: bool = True, level: int = 1) -> tuple[list[dict], str]:
    """(items, the source actually used) of task "gsm8k" (GSM8K from `data_dir`, $MINIPODS_GSM8K_DIR or the
    hub; missing: the synthetic task with `fallback`) or "synthetic". `notice`: print the synthetic notice."""
    if name == "synthetic":
        items = synthetic_split(split, limit, seed=seed, level=level)  # test never repeats a train question
        if notice:
            print(SYNTHETIC_NOTICE.format(why=WHY_CHOSEN), file=sys.stderr)
        return items, "synthetic"
    if name != "gsm8k":
        raise ValueError(f"unknown task {name!r}; expected 'gsm8k' or 'synthetic'")
    try:
        items = load_gsm8k(split, data_dir=data_dir, limit=limit)
    except DataNotFoundError as e:
        if not fallback:
            raise
        if notice:  # here (and only here) the user can act: say how to get GSM8K
            why = str(e).split(". Hub error")[0].replace("not found. Provide it", "not found; to use it, provide it")
            print(SYNTHETIC_NOTICE.format(why=why), file=sys.stderr)
        return load_task("synthetic", split, limit=limit, seed=seed, notice=False, level=level)[0], \
            "synthetic (GSM8K not found)"
    src = str(data_dir or os.environ.get(ENV_DIR) or f"hub:{HUB_DATASET[0]}")
    return items, f"gsm8k:{src}"


# ---------------------------------------------------------------- prompts
def build_prompt(tokenizer, question: str, system_prompt: str = SYSTEM_PROMPT) -> str:
    """One question as a system + user chat turn with the assistant header (plain text without a template)."""
    if getattr(tokenizer, "chat_template", None):
        messages = [{"role": "system", "content": system_prompt}, {"role": "user", "content": question}]
        return tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    return f"{system_prompt}\n\nQuestion: {question}\nAnswer:\n"
