"""Notebook 02 (rewards): worked answers. Each entry of SOLUTIONS is what `check` accepts; WHY says why."""

import re

from minipods.rewards import normalize_number

NUMBER = re.compile(r"-?\$?(?:[0-9]{1,3}(?:,[0-9]{3})+|[0-9]+)(?:\.[0-9]+)?")
TAGS = ("<reasoning>", "</reasoning>", "<answer>", "</answer>")


def _last_number(text):
    found = NUMBER.findall(text)
    return normalize_number(found[-1]) if found else None


def _boxed(text):
    i = text.rfind("\\boxed{")
    if i < 0:
        return None
    inner = text[i + len("\\boxed{"):]
    return _last_number(inner.split("}", 1)[0])


def extract(text):
    end = text.rfind("</answer>")
    start = text.rfind("<answer>", 0, end) if end >= 0 else -1
    if start >= 0:  # (1) the last complete block
        block = text[start + len("<answer>"):end]
        found = _boxed(block) or _last_number(block)
        if found is not None:
            return found
    i = text.rfind("####")
    if i >= 0:  # (2) the first number after the last ####
        found = NUMBER.search(text, i + 4)
        if found:
            return normalize_number(found.group())
    return _boxed(text) or _last_number(text)  # (3)


def fmt_reward(text):
    score, prev = 0.0, None  # prev: position of the previous tag when it occurs exactly once
    for i, tag in enumerate(TAGS):
        pos = text.find(tag) if text.count(tag) == 1 else None
        if pos is not None and (i == 0 or (prev is not None and prev < pos)):
            score += 0.025
        prev = pos
    return score


SOLUTIONS = {"02.1": extract, "02.2": fmt_reward, "02.3": 0.05, "02.4": 1.62, "02.5": 11}

WHY = {
    "02.1": "Lenient grading, in the package's order: the last complete <answer> block (its \\boxed{} number, else "
            "its last number), then GSM8K's '####', then the last \\boxed{}, then the last number; an unclosed block "
            "is a truncated generation, not an answer. normalize_number makes '$1,080.00' and '1080' equal.",
    "02.2": "Each tag earns 0.025 when it occurs exactly once and (after the first) its predecessor occurs once and "
            "before it, so order matters and a missing or doubled tag also costs the next one.",
    "02.3": "Deleting <reasoning> costs that tag and </reasoning> (which needs <reasoning> once before it); "
            "<answer> and </answer> still earn: 2 x 0.025 = 0.05.",
    "02.4": "mean 0.25, sample std sqrt((2 x 0.75^2 + 6 x 0.25^2) / 7) = 0.463, so (1 - 0.25) / 0.463 = 1.62; "
            "np.std's population std (0.433) would give 1.73.",
    "02.5": "P(silent) = 0.8^n + 0.2^n: 0.107 at n = 10, 0.086 at n = 11. Generation is the cheap phase, so a "
            "larger n buys audible groups for hard prompts.",
}
