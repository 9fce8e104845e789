"""Verifiable rewards for GSM8K-style math answers (docs/training.md, "Rewards", is the spec).

PODS trains with GRPO on rule-based rewards: in the paper's GSM8K setup each rollout is scored
with an accuracy reward (is the final number right?) plus a small format reward (did the model use
the requested <reasoning>/<answer> tags?):

    total_reward = correctness_reward (0 or 1) + format_reward (0 .. 0.1)

Grading is lenient, like the paper's. Every function is linear-time and never raises on a `str`: small
regexes (no nested quantifiers) run only on bounded slices, so hostile text cannot cause backtracking."""

import re
from decimal import Decimal, InvalidOperation

CORRECT_REWARD = 1.0
FORMAT_TAG_REWARD = 0.025
FORMAT_TAGS = ("<reasoning>", "</reasoning>", "<answer>", "</answer>")

# A number: optional '-', optional '$', digits (with proper thousands commas or none), optional
# decimal part. ASCII digits only ([0-9], not \d, which also matches e.g. Arabic-Indic digits).
_NUMBER = re.compile(r"-?\$?(?:[0-9]{1,3}(?:,[0-9]{3})+|[0-9]+)(?:\.[0-9]+)?")
_DIGIT = re.compile(r"[0-9]")
_PLAIN = re.compile(r"(-?)([0-9]*)(?:\.([0-9]*))?")
# Longest number accepted (characters): longer runs are no plausible answer; keeps regexes on bounded slices.
MAX_NUMBER_CHARS = 100


def normalize_number(s):
    """Canonical string for a number such as ' $1,080.00. ' -> '1080' ('3.50' -> '3.5', '-0' -> '0');
    None if not plain decimal notation. Pure string handling, so arbitrarily large integers stay
    exact (float would round). Non-str inputs (int, Decimal, float) are formatted first."""
    if not isinstance(s, str):
        try:
            d = Decimal(str(s))  # str(1e20) == '1e+20'; Decimal reads it exactly
        except (InvalidOperation, ValueError, TypeError):
            return None
        if not d.is_finite():
            return None
        s = format(d, "f")
    s = s.strip().replace("$", "").replace(",", "").strip().rstrip(".")
    if s.startswith("+"):
        s = s[1:]
    m = _PLAIN.fullmatch(s)
    if m is None:
        return None
    sign, ip, fp = m.group(1), m.group(2), m.group(3) or ""
    if not ip and not fp:
        return None  # '', '-', '.'
    ip = ip.lstrip("0") or "0"
    fp = fp.rstrip("0")
    out = ip + ("." + fp if fp else "")
    return "-" + out if sign and out != "0" else out


def _number_at(text, p):
    """Normalised number token covering the digit text[p]; None if it is too long."""
    lo, hi = max(0, p - MAX_NUMBER_CHARS), min(len(text), p + MAX_NUMBER_CHARS + 1)
    for m in _NUMBER.finditer(text, lo, hi):  # bounded: at most ~200 chars scanned
        if m.start() <= p < m.end():
            # A token cut by the window edge is > MAX_NUMBER_CHARS long, so this also catches it.
            return normalize_number(m.group()) if m.end() - m.start() <= MAX_NUMBER_CHARS else None
    return None


def _first_number(text):
    m = _DIGIT.search(text)
    return None if m is None else _number_at(text, m.start())


def _last_number(text):
    # Reverse copy (a memcpy, fast) turns "last digit" into a forward search.
    m = _DIGIT.search(text[::-1])
    return None if m is None else _number_at(text, len(text) - 1 - m.start())


def _boxed_number(text):
    """Number inside the last \\boxed{...} (up to the first '}': GSM8K answers need no nesting), else None."""
    i = text.rfind("\\boxed{")
    if i < 0:
        return None
    i += len("\\boxed{")
    j = text.find("}", i)
    return _last_number(text[i:] if j < 0 else text[i:j])


def extract_answer(text):
    """Final numeric answer of a completion as a normalised string, or None (docs/training.md, "Rewards",
    gives the order); an unclosed <answer> is not a block, numbers over MAX_NUMBER_CHARS count as none."""
    if not isinstance(text, str):
        return None
    end = text.rfind("</answer>")
    if end >= 0:
        start = text.rfind("<answer>", 0, end)
        if start >= 0:
            content = text[start + len("<answer>"):end]
            ans = _boxed_number(content) or _last_number(content)
            if ans is not None:
                return ans
    i = text.rfind("####")
    if i >= 0:
        ans = _first_number(text[i + 4:])
        if ans is not None:
            return ans
    return _boxed_number(text) or _last_number(text)


def strict_answer(text):
    """The strict grader: the number of the one well-formed answer block (`<answer>` and `</answer>` once
    each, in that order), or None. Beside the lenient `extract_answer` it shows what formatting costs."""
    if not isinstance(text, str) or text.count("<answer>") != 1 or text.count("</answer>") != 1:
        return None
    start, end = text.find("<answer>"), text.find("</answer>")
    if start > end:
        return None
    content = text[start + len("<answer>"):end]
    return _boxed_number(content) or _last_number(content)


def _same_number(ans, gold):
    g = normalize_number(gold)
    if g is None:
        raise ValueError(f"gold answer is not a number: {gold!r}")
    # Canonical strings are unique per value, but compare Decimals to be explicit.
    return ans is not None and Decimal(ans) == Decimal(g)


def strict_correct(completion, gold):
    """1.0 if the strict answer (`strict_answer`) equals `gold` numerically, else 0.0."""
    return 1.0 if _same_number(strict_answer(completion), gold) else 0.0


def correctness_reward(completion, gold):
    """CORRECT_REWARD (1.0) if the extracted answer equals `gold` numerically ('1,080', 1080.0 ...),
    else 0.0. A gold that is not a number raises ValueError: a data bug that a 0 would hide."""
    return CORRECT_REWARD if _same_number(extract_answer(completion), gold) else 0.0


def format_reward(completion):
    """FORMAT_TAG_REWARD (0.025) per well-placed tag of FORMAT_TAGS (docs/training.md, "Rewards"), 0 .. 0.1:
    a missing </reasoning> costs that tag and <answer>, 0.05 left."""
    if not isinstance(completion, str):
        return 0.0
    score, prev = 0.0, None  # prev: position of tag i-1 if it occurs exactly once
    for i, tag in enumerate(FORMAT_TAGS):
        pos = completion.find(tag) if completion.count(tag) == 1 else None
        if pos is not None and (i == 0 or (prev is not None and prev < pos)):
            score += FORMAT_TAG_REWARD
        prev = pos
    return score


def is_full_format(format_score):
    """Whether a `format_reward` value means all four tags are well placed (0.1, up to float rounding)."""
    return format_score >= FORMAT_TAG_REWARD * len(FORMAT_TAGS) - 1e-9


def total_reward(completion, gold):
    """correctness_reward + format_reward, in [0, 1.1]."""
    return correctness_reward(completion, gold) + format_reward(completion)


def score_completions(completions, golds):
    """Score a batch: dict of equal-length float lists `reward`, `correct`, `format`."""
    if len(completions) != len(golds):
        raise ValueError(f"got {len(completions)} completions but {len(golds)} golds")
    correct = [correctness_reward(c, g) for c, g in zip(completions, golds)]
    fmt = [format_reward(c) for c in completions]
    return {"reward": [c + f for c, f in zip(correct, fmt)], "correct": correct, "format": fmt}
