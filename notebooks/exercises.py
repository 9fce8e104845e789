"""Exercises for the six notebooks, with checks that can fail (issue 49).

In a notebook (this folder is on the path, as for `lessons`):

    from exercises import check
    check("03.2", max_variance_subset)   # one line: right, not yet (with a hint), or not answered yet

Three kinds. *implement*: write a function the package has; the check runs it against the package's own
function on randomised inputs over fixed seeds and edge cases (ties, all-equal groups, m = n, m = 1), so
no single value can be copied. *predict*: write a number before the cell that computes it; the check
compares with a tolerance and explains the gap. *observe*: change one setting, answer a question; the
check recomputes the answer with the package. A stub left as it is prints "not answered yet" and never
raises, so the notebooks run in CI untouched. Every check takes well under a second (no model).

    python notebooks/exercises.py --self-test   # every check on its solution and on its stub: one line
    python notebooks/exercises.py --cells [NN]  # the notebook cells of each exercise (jupytext percent)
    python notebooks/exercises.py --release OUT # the student edition (notebooks/release.py)
    python notebooks/exercises.py --grade SUBMISSION... --out grades.csv [--seed S]  # notebooks/grade.py
    python notebooks/exercises.py               # the list

Worked answers with a sentence on why: notebooks/solutions/sNN.py (imported only by the self-test).
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import itertools
import math
import os
import sys
import textwrap
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np

KINDS = ("implement", "predict", "observe")
# The implement-checks' random inputs come from fixed seeds; a grader sets MINIPODS_EXERCISE_SEED to draw others
# (inputs the students have not seen; docs/teaching.md, "Graded homework").
GRADING_SEED = int(os.environ.get("MINIPODS_EXERCISE_SEED", "0") or 0)


class Unanswered(Exception):
    """The stub is as given (None, `...`, or a function that raises NotImplementedError)."""


class StudentError(Exception):
    """The answer's own code raised, or returned something of the wrong shape or type."""


@dataclass
class Exercise:
    id: str  # "NN.k": notebook NN, exercise k
    kind: str  # one of KINDS
    title: str
    section: str  # where its cells go: the end of this section of the notebook
    question: str  # markdown
    name: str  # the variable the stub defines and `check` is given
    cells: list[str]  # code cells; the last gets `check(id, name)` appended
    judge: Callable  # answer -> (ok, line); raises Unanswered

    @property
    def notebook(self) -> str:
        return self.id.split(".")[0]


EXERCISES: dict[str, Exercise] = {}


def exercise(ex_id, kind, title, section, name, question, *cells):
    """Register the decorated judge as exercise `ex_id` (cells: dedented code, stub first)."""
    assert kind in KINDS and ex_id not in EXERCISES

    def register(judge):
        EXERCISES[ex_id] = Exercise(ex_id, kind, title, section, textwrap.dedent(question).strip(), name,
                                    [textwrap.dedent(c).strip() for c in cells], judge)
        return judge
    return register


def _verdict(ex_id: str, answer) -> tuple[bool | None, str]:
    """(True, line) right; (False, line) wrong; (None, line) not answered yet."""
    ex = EXERCISES[ex_id]
    if answer is None or answer is Ellipsis:
        return None, "not answered yet: " + ("write your function and rerun the cell" if ex.kind == "implement"
                                             else "replace None with your answer and rerun the cell")
    if ex.kind == "implement" and (getattr(answer, "__module__", None) or "").startswith("minipods"):
        return False, "that is the package's own function: write your own and rerun"
    try:
        ok, line = _within(CHECK_TIMEOUT_S, ex.judge, answer)
    except TimeoutError:
        return False, (f"timed out: the check gave up after {CHECK_TIMEOUT_S:g} s (a loop that never ends?); your code "
                       "may still be running in the background: restart the kernel if the notebook slows")
    except Unanswered:
        return None, "not answered yet: replace `raise NotImplementedError` with your code and rerun the cell"
    except StudentError as e:
        return False, str(e)
    return bool(ok), line


CHECK_TIMEOUT_S = float(os.environ.get("MINIPODS_CHECK_TIMEOUT_S", "60") or 60)


def _within(seconds: float, fn, *args):
    """fn(*args) in a daemon thread, waiting at most `seconds` (TimeoutError after): portable (Linux, macOS,
    Windows, any thread, unlike signal.alarm). A thread cannot be killed, so a runaway answer keeps running in the
    background; the grader (notebooks/grade.py) also kills its child process from outside."""
    box = {}

    def run():
        try:
            box["out"] = fn(*args)
        except BaseException as e:  # noqa: BLE001 (re-raised in the caller's thread)
            box["err"] = e
    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(seconds)
    if t.is_alive():
        raise TimeoutError
    if "err" in box:
        raise box["err"]
    return box["out"]


def check(ex_id: str, answer) -> None:
    """Check `answer` to exercise `ex_id` and print its verdict line (✓ right, ✗ wrong, · not answered yet).
    Returns None, so the check cell shows the line, not a stray True/False; the verdict itself: `_verdict`."""
    if ex_id not in EXERCISES:
        raise KeyError(f"no exercise {ex_id!r}; there are {', '.join(EXERCISES)}")
    ok, line = _verdict(ex_id, answer)
    mark = {True: "✓", False: "✗", None: "·"}[ok]
    print(f"{mark} {ex_id} {line}")


# ---------------------------------------------------------------- helpers for judges
def _call(fn, *args):
    """fn(*args), with the student's NotImplementedError as Unanswered and other errors as StudentError."""
    if not callable(fn):
        raise StudentError(f"expected a function, got {type(fn).__name__}")
    try:
        out = fn(*args)
    except NotImplementedError:
        raise Unanswered from None
    except Exception as e:  # noqa: BLE001 (any error in the student's code is reported, not raised)
        raise StudentError(f"your function raised {type(e).__name__}: {e} (input {_short(args)})") from None
    if out is Ellipsis:
        raise Unanswered
    return out


def _short(x, width: int = 160) -> str:
    s = repr(x.tolist() if hasattr(x, "tolist") else x)
    return s if len(s) <= width else s[:width - 3] + "..."


def _number(answer) -> float:
    if isinstance(answer, bool):
        raise StudentError("expected a number, got True/False")
    try:
        x = float(answer)
    except (TypeError, ValueError):
        raise StudentError(f"expected a number, got {answer!r}") from None
    if not math.isfinite(x):
        raise StudentError(f"expected a finite number, got {answer!r}")
    return x


def _array(out, shape, what: str = "your function") -> np.ndarray:
    """out as a float array of `shape`, else StudentError."""
    try:
        a = np.asarray(out.detach().cpu() if hasattr(out, "detach") else out, dtype=np.float64)
    except (TypeError, ValueError):
        raise StudentError(f"{what} returned {_short(out)}, not an array of numbers") from None
    if a.shape != tuple(shape):
        raise StudentError(f"{what} returned shape {a.shape}, expected {tuple(shape)}")
    return a


def _predict(answer, truth: float, tol: float, fmt: str, gaps=(), rel: bool = False, why: str = ""):
    """A prediction against the package's value: within tol (relative if rel) passes; a gap that matches a
    known mistake gets its explanation. gaps: (value, explanation) pairs."""
    x = _number(answer)
    off = abs(x - truth) / (abs(truth) if rel and truth else 1.0)
    said = f"you predicted {x:{fmt}}, the package gives {truth:{fmt}}"
    if off <= tol:
        return True, f"close: {said}" + (f". {why}" if why else "")
    for value, explanation in gaps:
        if abs(x - value) <= tol * (abs(value) if rel else 1.0):
            return False, f"off: {said}. {explanation}"
    return False, f"off: {said} (within {tol:g}{' relative' if rel else ''} counts). {why}"


def _rng(seed: int):
    """The judge's generator: its own seed, shifted by the grader's MINIPODS_EXERCISE_SEED (0: the public inputs)."""
    return np.random.default_rng([seed, GRADING_SEED] if GRADING_SEED else seed)


def _stats():
    """minipods.stats (mean_interval, sign_flip_p, t975), imported when a check needs it."""
    from minipods import stats
    return stats


# ================================================================ 01 · rollouts
@exercise("01.1", "implement", "position ids under left padding", "3. Batched generation, left padding and masks",
          "positions", """
    **Exercise 01.1 (implement).** Left padding puts every prompt's pads first, so a real token's column is
    not its position. Write `positions(mask)`: for a left-padded (B, L) attention mask, number each row's
    real tokens 0, 1, 2, ... from its first real token, exactly as if the row had no padding (what the pads
    get does not matter). The check runs it against `minipods.rollouts.positions_from_mask` on random masks.
    """, '''
    import torch

    def positions(mask):
        """(B, L) position ids of a left-padded 0/1 mask (B, L): each row's real tokens numbered 0, 1, 2, ..."""
        raise NotImplementedError("01.1: your code here")
    ''')
def _j_01_1(fn):
    import torch
    from minipods.rollouts import positions_from_mask
    rng = _rng(11)
    masks = [torch.tensor([[0, 0, 1, 1, 1], [1, 1, 1, 1, 1]]), torch.ones(1, 1, dtype=torch.long),
             torch.tensor([[0, 0, 0, 1]])]
    for _ in range(60):
        B, L = int(rng.integers(1, 6)), int(rng.integers(1, 13))
        pads = rng.integers(0, L, B)  # at least one real token per row
        masks.append(torch.as_tensor(np.arange(L)[None, :] >= pads[:, None]).long())
    for mask in masks:
        got = _array(_call(fn, mask.clone()), mask.shape)
        want, real = positions_from_mask(mask).numpy(), mask.bool().numpy()
        if not np.array_equal(got[real], want[real]):
            hint = ("you numbered the pads too: a row's first real token is position 0, however many pads come first"
                    if np.array_equal(got[real], np.broadcast_to(np.arange(mask.shape[1]), mask.shape)[real]) else
                    "off by one: the first real token is position 0 (the running count of real tokens, minus 1)"
                    if np.array_equal(got[real], want[real] + 1) else
                    "a real token's position = the number of real tokens up to and including it, minus 1")
            return False, f"on mask {mask.tolist()} your real tokens get {got[real].astype(int).tolist()}, " \
                          f"expected {want[real].tolist()}. Hint: {hint}"
    return True, f"your positions match minipods.rollouts.positions_from_mask on {len(masks)} masks (1-5 rows, no padding, one real token)"


@exercise("01.2", "implement", "the completion mask", "3. Batched generation, left padding and masks",
          "completion_mask", """
    **Exercise 01.2 (implement).** `generate` pads every finished row until the longest one ends. Write
    `completion_mask(ids, eos_ids)`: 1 on each row's sampled tokens up to *and including* its first token
    that is in `eos_ids`, 0 after it; a row with no EOS is all 1. The check compares with
    `minipods.rollouts.completion_mask_from_ids` on random token rows and EOS sets.
    """, '''
    import torch

    def completion_mask(ids, eos_ids):
        """(B, C) 0/1 mask for sampled token ids (B, C): 1 up to and including each row's first EOS, then 0."""
        raise NotImplementedError("01.2: your code here")
    ''')
def _j_01_2(fn):
    import torch
    from minipods.rollouts import completion_mask_from_ids
    rng = _rng(12)
    cases = [(torch.tensor([[5, 3, 2, 2, 9], [2, 4, 4, 4, 4], [1, 1, 1, 1, 1]]), [2])]
    for _ in range(60):
        B, C = int(rng.integers(1, 6)), int(rng.integers(1, 10))
        cases.append((torch.as_tensor(rng.integers(0, 10, (B, C))), [[2], [2, 7], [0, 9, 4]][int(rng.integers(3))]))
    for ids, eos in cases:
        got = _array(_call(fn, ids.clone(), list(eos)), ids.shape)
        want = completion_mask_from_ids(ids, eos).numpy()
        if not np.array_equal(got, want):
            is_eos = np.isin(ids.numpy(), eos)
            hint = ("keep the EOS itself (1 on it): the update must train the model to stop"
                    if np.array_equal(got, want * ~is_eos) else
                    "the first EOS ends the completion: every token after it is 0, EOS or not"
                    if np.array_equal(got, (~is_eos).astype(float)) or np.array_equal(got, want | is_eos) else
                    "count the EOS tokens strictly before each position; a token is kept while that count is 0")
            return False, f"on ids {ids.tolist()} with eos_ids {eos} your mask is {got.astype(int).tolist()}, " \
                          f"expected {want.tolist()}. Hint: {hint}"
    return True, f"your mask matches minipods.rollouts.completion_mask_from_ids on {len(cases)} batches (EOS first, last, twice, never)"


Z01 = [4.0, 3.2, 2.5, 2.5, 1.0, 0.0, -1.0, -3.0]


def _top_share(T: float) -> float:
    """The share of 1,000 inverse-CDF draws from softmax(Z01 / T) (seeded uniforms) that pick token 0."""
    import torch
    from minipods.fast.sampler import sample_inverse_cdf
    p = torch.softmax(torch.tensor(Z01) / T, -1)
    u = torch.rand(1000, generator=torch.Generator().manual_seed(0))
    return float((sample_inverse_cdf(p.expand(1000, -1).contiguous(), u) == 0).float().mean())


@exercise("01.3", "observe", "temperature and the top token", "4. Sampling temperature", "top_share_at_03", """
    **Exercise 01.3 (observe).** The cell draws 1,000 next tokens from softmax(z / T) for eight made-up
    logits with the fast engine's sampler (`minipods.fast.sampler.sample_inverse_cdf`, seeded). Change `T`
    to 0.3, then 1.5, and rerun each time. Answer: at T = 0.3, what share of the draws is the most likely
    token (0.5 for half)? What would that do to the n rollouts of one prompt?
    """, '''
    import torch
    from minipods.fast.sampler import sample_inverse_cdf

    T = 0.9  # change me: 0.3, 1.5
    z = torch.tensor([4.0, 3.2, 2.5, 2.5, 1.0, 0.0, -1.0, -3.0])  # logits of eight tokens
    p = torch.softmax(z / T, -1)
    u = torch.rand(1000, generator=torch.Generator().manual_seed(0))
    draws = sample_inverse_cdf(p.expand(1000, -1).contiguous(), u)
    print(f"T = {T}: entropy {float(-(p * p.log()).sum()):.2f} nats | the top token drawn "
          f"{float((draws == 0).float().mean()):.1%} of 1000 times | {len(draws.unique())} distinct tokens")
    top_share_at_03 = None  # your answer: the top token's share of the draws at T = 0.3
    ''')
def _j_01_3(answer):
    x, want = _number(answer), _top_share(0.3)
    if abs(x - want) <= 0.02:
        return True, f"right: at T = 0.3 the top token takes {want:.1%} of the draws (at T = 0.9 {_top_share(0.9):.1%}): " \
                     "a cold policy repeats itself, so its n rollouts, and their rewards, differ less"
    for T in (0.9, 1.5):
        if abs(x - _top_share(T)) <= 0.01:
            return False, f"{x:.3f} is the share at T = {T}: set T = 0.3 and rerun the cell"
    return False, f"you answered {x:.3f}: set T = 0.3, rerun the cell and read the share it prints (a fraction, 0.5 for half)"


@exercise("01.4", "predict", "where a decode step stops being memory-bound", "5. Why inference is cheap to parallelise",
          "crossover_prediction", """
    **Exercise 01.4 (predict, then run).** Section 5 put the L40S's crossover B* at bf16 weights, 2 bytes
    each. The paper stores the frozen base in 4 bits (QLoRA, notebook 04): half a byte per weight read, while
    the arithmetic stays 2 FLOPs per weight per row (864 GB/s, 362 TFLOP/s bf16, datasheet). Predict the batch
    size B* above which the step's arithmetic takes longer than reading the weights (compute-bound), then run
    the next cell, which prices the step with `minipods.measure.speed.roofline` (the 4-bit scales and the
    unpacking left out).
    """, '''
    crossover_prediction = None  # your prediction: B*, the batch size where the step turns compute-bound
    ''', '''
    from minipods.measure.speed import roofline

    N = 3.09e9  # Qwen2.5-3B's weights (any N gives the same B*)
    for B in (1, 16, 64, 128, 256, 512):
        r = roofline(0.5 * N, 2 * N * B, mem_gbs=864, tflops=362)  # 4-bit weights: half a byte each
        print(f"B = {B:4d}: reading the weights {1e3 * r['memory_s']:.3f} ms, arithmetic {1e3 * r['compute_s']:.3f} ms "
              f"-> {r['bound']}-bound")
    ''')
def _j_01_4(answer):
    from minipods.measure.speed import roofline
    truth = next(B for B in range(1, 100_000) if roofline(0.5, 2.0 * B, 864, 362)["bound"] == "compute")
    return _predict(answer, truth, 0.2, ".0f", rel=True, gaps=[
        (4 * truth, "That is section 5's B* for bf16 weights (2 bytes): 4-bit weights are half a byte, so reading "
                    "them takes a quarter of the time and B* = 362e12 x 0.5 / (2 x 864e9)"),
        (2 * truth, "4 bits are half a byte, not one: B* = 362e12 x 0.5 / (2 x 864e9)"),
        (truth / 2, "A weight costs 2 FLOPs per row, not 4: B* = 362e12 x 0.5 / (2 x 864e9)")],
        why="Smaller weights make the step compute-bound sooner (a quarter of bf16's B*), yet the paper's n = 64 "
            "rollouts per prompt still sit below it")


# ================================================================ 02 · rewards
NUMBER_RE = r"-?\$?(?:[0-9]{1,3}(?:,[0-9]{3})+|[0-9]+)(?:\.[0-9]+)?"


def _completions(rng):
    """(category, text) pairs: every route of the answer extractor, with distractor numbers."""
    def num():
        k = int(rng.integers(6))
        v = int(rng.integers(1, 3000))
        return [str(v), f"{v:,}", f"${v:,}.00", f"-{v}", f"{v}.50", f"{v}."][k]

    def filler():
        a, b = int(rng.integers(1, 99)), int(rng.integers(1, 99))
        return f"{a} + {b} = {a + b}, then {a} x 2 = {2 * a}."
    out = []
    for _ in range(12):
        x, y, v = num(), num(), num()
        out += [("block", f"<reasoning>{filler()}</reasoning>\n<answer>{v}</answer>"),
                ("words in the block", f"<answer>So {x} + {y} = {v} apples</answer>"),
                ("boxed inside the block", f"<answer>\\boxed{{{v}}} (from {x} and {y})</answer>"),
                ("two blocks", f"<answer>{x}</answer> wait, no: <answer>{v}</answer>"),
                ("####", f"{filler()}\n#### {v}\nThe answer is {x}"),
                ("empty block", f"The total is {v}.\n<answer></answer>"),
                ("block without a number", f"{filler()} <answer>none</answer>\n#### {v}"),
                ("unclosed block", f"<reasoning>{filler()}</reasoning><answer>{v}"),
                ("boxed outside a block", f"so the answer is \\boxed{{{v}}}. Check: {x} + {y}"),
                ("last number", f"{filler()} So she has {v} left"),
                ("no number", "I do not know the answer.")]
    return out


EXTRACT_HINTS = {
    "two blocks": "the last complete <answer>...</answer> block wins",
    "boxed inside the block": "inside the block, the number in \\boxed{...} wins over the block's last number",
    "####": "without a complete block, take the first number after the last '####' (GSM8K's own format)",
    "empty block": "a block with no number falls through to '####', then \\boxed{}, then the last number",
    "block without a number": "a block with no number falls through to '####', then \\boxed{}, then the last number",
    "unclosed block": "an unclosed <answer> (cut at max_new_tokens) is no block: fall through to the last number",
    "boxed outside a block": "without a block or '####', the number in the last \\boxed{...} wins",
    "no number": "return None when the text has no number",
}


@exercise("02.1", "implement", "the lenient answer extractor", "2. Extracting the answer", "extract", """
    **Exercise 02.1 (implement).** Write the grader's extractor from the order given above. `NUMBER` finds a
    number as the package reads one and `normalize_number` gives its canonical string. The check compares
    with `minipods.rewards.extract_answer` on over a hundred generated completions (blocks, '####',
    `\\boxed{}`, money, unclosed blocks, no number at all).
    """, r'''
    import re
    from minipods.rewards import normalize_number  # '$1,080.00' -> '1080'

    NUMBER = re.compile(r"-?\$?(?:[0-9]{1,3}(?:,[0-9]{3})+|[0-9]+)(?:\.[0-9]+)?")  # one number

    def extract(text):
        r"""The final answer as normalize_number's string, or None: (1) the last complete <answer>...</answer>
        block: the number in its \boxed{...} if any, else its last number; (2) else the first number after the
        last '####'; (3) else the number in the last \boxed{...}, else the last number anywhere."""
        raise NotImplementedError("02.1: your code here")
    ''')
def _j_02_1(fn):
    from minipods.rewards import extract_answer, normalize_number
    cases = _completions(_rng(21))
    answered = False
    for cat, text in cases:
        got, want = _call(fn, text), extract_answer(text)
        answered = answered or got is not None
        if got != want:
            hint = ("normalise the number with normalize_number (no '$', no commas, no trailing zeros)"
                    if got is not None and normalize_number(str(got)) == want else
                    EXTRACT_HINTS.get(cat, "inside a block take its last number; outside, follow the order above"))
            return False, f"on {text!r} you return {got!r}, expected {want!r} ({cat}). Hint: {hint}"
    if not answered:
        raise Unanswered
    return True, f"your extractor matches minipods.rewards.extract_answer on {len(cases)} completions of {len(EXTRACT_HINTS) + 3} kinds"


FORMAT_TAGS = ("<reasoning>", "</reasoning>", "<answer>", "</answer>")


def _tag_texts(rng):
    """Texts with the four format tags in order, then deleted, duplicated, swapped and shuffled."""
    out = ["<reasoning>r</reasoning><answer>72</answer>", "72", "<reasoning>r <answer>72</answer>",
           "<answer>72</answer><reasoning>r</reasoning>", "<reasoning>r</reasoning><answer>7<answer>72</answer>"]
    for _ in range(150):
        tags = list(FORMAT_TAGS)
        for _ in range(int(rng.integers(0, 3))):
            i, op = int(rng.integers(len(tags))) if tags else 0, int(rng.integers(4))
            if op == 0 and tags:
                del tags[i]
            elif op == 1 and tags:
                tags.insert(i, tags[i])
            elif op == 2 and len(tags) > 1:
                j = int(rng.integers(len(tags)))
                tags[i], tags[j] = tags[j], tags[i]
            elif op == 3:
                rng.shuffle(tags)
        out.append("".join(f"{t} {int(rng.integers(100))} " for t in tags))
    return out


@exercise("02.2", "implement", "the format reward", "3. The format reward", "fmt_reward", """
    **Exercise 02.2 (implement).** Write the format reward from the rule above: 0.025 per tag that occurs
    exactly once and, after the first tag, whose previous tag also occurs exactly once and comes before it.
    The check compares with `minipods.rewards.format_reward` on generated texts whose tags are deleted,
    duplicated, swapped and shuffled.
    """, '''
    TAGS = ("<reasoning>", "</reasoning>", "<answer>", "</answer>")

    def fmt_reward(text):
        """0.025 for each tag of TAGS that occurs exactly once and, after the first, whose previous tag also
        occurs exactly once and comes before it: 0 .. 0.1."""
        raise NotImplementedError("02.2: your code here")
    ''')
def _j_02_2(fn):
    from minipods.rewards import format_reward
    texts = _tag_texts(_rng(22))
    for text in texts:
        got, want = _number(_call(fn, text)), format_reward(text)
        if abs(got - want) > 1e-9:
            present = 0.025 * sum(t in text for t in FORMAT_TAGS)
            once = 0.025 * sum(text.count(t) == 1 for t in FORMAT_TAGS)
            hint = ("a tag earns only when it occurs exactly once, and (after the first) its previous tag occurs "
                    "exactly once before it" if abs(got - present) < 1e-9 else
                    "order matters: after the first tag, a tag earns only if the previous tag comes before it"
                    if abs(got - once) < 1e-9 else
                    "a missing or duplicated tag also costs the tag after it")
            return False, f"on {text!r} you give {got:.3f}, expected {want:.3f}. Hint: {hint}"
    return True, f"your format reward matches minipods.rewards.format_reward on {len(texts)} texts"


@exercise("02.3", "observe", "what one missing tag costs", "3. The format reward", "reward_without_opening_reasoning", """
    **Exercise 02.3 (observe).** Section 3 deleted `</reasoning>`. Edit `edited` below: delete the *opening*
    `<reasoning>` from the well-formed completion instead (`TEXT.replace("<reasoning>", "")`, as a model that
    starts reasoning without the tag writes) and rerun. Answer: its format reward now? Then try other edits
    (`</answer>` deleted, a second `<answer>`, the blocks swapped): which tags does each one cost?
    """, '''
    from minipods.rewards import format_reward

    TEXT = "<reasoning>48/2 = 24; 48 + 24 = 72</reasoning>\\n<answer>72</answer>"
    edited = TEXT  # change me
    print(f"format reward {format_reward(edited):.3f} for {edited!r}")
    reward_without_opening_reasoning = None  # your answer: the format reward once <reasoning> is deleted
    ''')
def _j_02_3(answer):
    from minipods.rewards import format_reward
    x = _number(answer)
    want = format_reward("48/2 = 24; 48 + 24 = 72</reasoning>\n<answer>72</answer>")
    if abs(x - want) < 1e-9:
        return True, f"right: {want:.3f}; the missing <reasoning> costs itself and </reasoning>, which needs it once before"
    if abs(x - 0.075) < 1e-9:
        return False, "0.075 would charge only the deleted tag: </reasoning> earns only when <reasoning> occurs once " \
                      "before it, so it goes too. Rerun the cell on the edited text"
    if abs(x - 0.1) < 1e-9:
        return False, "0.1 is the untouched completion: delete <reasoning> from `edited` and rerun"
    return False, f"you answered {x:.3f}: delete <reasoning> in `edited`, rerun, and read the reward it prints"


@exercise("02.4", "predict", "the advantage of a right answer", "5. Zero-variance groups carry no GRPO signal",
          "advantage_prediction", """
    **Exercise 02.4 (predict, then run).** A group of eight rollouts, two right (reward 1) and six wrong (0).
    Predict the advantage GRPO gives each right one, then run the next cell.
    """, '''
    advantage_prediction = None  # your prediction: the advantage of a reward-1 rollout
    ''', '''
    import torch
    from minipods.grpo import group_advantages

    r = torch.tensor([1.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0])
    print("advantages:", [round(a, 3) for a in group_advantages(r, torch.zeros(8, dtype=torch.long)).tolist()])
    ''')
def _j_02_4(answer):
    import torch
    from minipods.grpo import group_advantages
    r = torch.tensor([1.0, 1.0, 0, 0, 0, 0, 0, 0])
    truth = float(group_advantages(r, torch.zeros(8, dtype=torch.long))[0])
    return _predict(answer, truth, 0.03, ".3f", gaps=[
        (0.75 / float(np.std(r.numpy())), "That divides by the population std (np.std, divisor n); GRPO divides by "
                                          "the sample std (divisor n - 1, torch.std's default)"),
        (0.75, "That is r - mean without the division by the group's std")],
        why="(1 - 0.25) / the sample std 0.463")


@exercise("02.5", "observe", "how many rollouts keep a hard prompt audible", "5. Zero-variance groups carry no GRPO signal",
          "smallest_n", """
    **Exercise 02.5 (observe).** A prompt the model solves one time in five (p = 0.2). Change `n` in the cell
    and rerun until you find the smallest n at which a group of n rollouts is silent (all equal) less than 10%
    of the time.
    """, '''
    from minipods.analysis.gradients import predicted_silent_fraction

    p, n = 0.2, 4  # change n
    print(f"p = {p}, n = {n}: a group is silent with probability {predicted_silent_fraction(p, n):.3f}")
    smallest_n = None  # your answer: the smallest n with a silent probability below 0.10
    ''')
def _j_02_5(answer):
    from minipods.analysis.gradients import predicted_silent_fraction
    x = _number(answer)
    want = next(n for n in range(1, 1000) if predicted_silent_fraction(0.2, n) < 0.10)
    if x == want:
        return True, f"right: n = {want} (silent {predicted_silent_fraction(0.2, want):.3f}; n = {want - 1}: " \
                     f"{predicted_silent_fraction(0.2, want - 1):.3f}); n = 4 would waste {predicted_silent_fraction(0.2, 4):.0%} of the groups"
    if x == want - 1:
        return False, f"at n = {want - 1} the group is silent with probability {predicted_silent_fraction(0.2, want - 1):.3f}, not below 0.10"
    return False, f"at n = {x:g} the silent probability is " + (
        f"{predicted_silent_fraction(0.2, int(x)):.3f}: " if x >= 1 and x == int(x) else "undefined: ") + \
        "rerun with n one by one from 4 and stop at the first below 0.10"


# ================================================================ 03 · max variance
@exercise("03.1", "predict", "what max-variance keeps of binary rewards", "3. Hence: the k lowest plus the m−k highest",
          "ones_prediction", """
    **Exercise 03.1 (predict, then run).** Sixteen rollouts, ten right (reward 1) and six wrong (0); the update
    keeps m = 5. Predict how many right answers max-variance keeps, then run the next cell.
    """, '''
    ones_prediction = None  # your prediction: how many of the 5 kept rewards are 1
    ''', '''
    import numpy as np
    from minipods.downsample import max_variance, subset_variance

    r = np.array([1.0] * 10 + [0.0] * 6)
    keep = max_variance(r, 5)
    print(f"max_variance keeps {r[keep].tolist()} (variance {subset_variance(r, keep):.3f})")
    ''')
def _j_03_1(answer):
    from minipods.downsample import max_variance
    r = np.array([1.0] * 10 + [0.0] * 6)
    truth = float(r[max_variance(r, 5)].sum())
    x = _number(answer)
    if x in (2.0, 3.0) and x != truth:  # a tie under the maths: accepted, the package's tie-break named
        return True, f"right: {x:.0f} or {truth:.0f} right answers give the same variance (2/5 x 3/5 = 0.24); the " \
                     f"package's tie-break (the smallest k of lowest rewards) keeps {truth:.0f}"
    return _predict(answer, truth, 0.0, ".0f", gaps=[
        (5.0, "Five right answers have variance 0: that is max-reward's choice, and it teaches nothing"),
        (2.0, "2 or 3 right answers give the same variance (2/5 x 3/5 = 0.24); the package's tie-break (the smallest k "
              "of lowest rewards) keeps the extra right one")],
        why="As balanced as the counts allow; an odd m keeps the extra right answer")


@exercise("03.2", "implement", "the max-variance subset by the k-scan", "5. Check against brute force",
          "max_variance_subset", """
    **Exercise 03.2 (implement).** Write the max-variance rule from sections 3 and 4: sort once, try the m + 1
    candidates "the k lowest plus the m − k highest" (k = 0..m), return the indices of the best. The check
    compares the variance of your subset with `minipods.downsample.max_variance`'s on hundreds of groups
    (binary, correctness + format, Gaussian, offset, ties, all equal, every m from 1 to n).
    """, '''
    import numpy as np

    def max_variance_subset(rewards, m):
        """Indices of m of the rewards with the largest population variance (any of equally good subsets)."""
        raise NotImplementedError("03.2: your code here")
    ''')
def _j_03_2(fn):
    from minipods.downsample import max_variance
    rng = _rng(32)
    kinds = [lambda n: rng.integers(0, 2, n).astype(float), lambda n: rng.integers(0, 2, n) + 0.025 * rng.integers(0, 5, n),
             lambda n: rng.normal(size=n), lambda n: 100 + rng.normal(size=n), lambda n: rng.integers(0, 3, n).astype(float),
             lambda n: np.full(n, 0.7)]
    groups = [kinds[i % len(kinds)](int(rng.integers(1, 13))) for i in range(90)]
    cases = 0
    for r in groups:
        for m in range(1, len(r) + 1):
            cases += 1
            got = _call(fn, r.copy(), m)
            idx = _indices(got, r, m)
            best = np.var(r[max_variance(r, m)])
            if not np.isclose(np.var(r[idx]), best, rtol=1e-9, atol=1e-12):
                return False, f"on rewards {np.round(r, 3).tolist()} with m = {m} your subset {sorted(idx)} has variance " \
                              f"{np.var(r[idx]):.4f}, the best is {best:.4f}. Hint: {_mv_hint(r, m, idx)}"
    return True, f"your subsets reach max_variance's variance on all {cases} (group, m) cases, m = 1 and m = n included"


def _indices(got, r, m) -> list[int]:
    """The student's subset as m distinct valid indices, else StudentError."""
    try:
        idx = [int(i) for i in np.asarray(got.detach().cpu() if hasattr(got, "detach") else got).ravel()]
    except (TypeError, ValueError):
        raise StudentError(f"return a list of indices, got {_short(got)}") from None
    if len(idx) != m or len(set(idx)) != m or not all(0 <= i < len(r) for i in idx):
        raise StudentError(f"return m = {m} distinct indices into rewards (0..{len(r) - 1}), got {_short(got)}")
    return idx


def _mv_hint(r, m, idx) -> str:
    from minipods.downsample import max_reward
    v, s = np.var(r[idx]), np.sort(r)
    if np.isclose(v, np.var(r[max_reward(r, m)])):
        return "that is the top m (max-reward); keep the k lowest plus the m - k highest, for the best k"
    if np.isclose(v, np.var(np.concatenate([s[:m // 2], s[len(r) - m + m // 2:]]))):
        return "you fixed k = m/2; scan every k = 0..m (unbalanced rewards need an unbalanced split)"
    if set(idx) <= set(range(m)) or set(idx) == set(range(len(r) - m, len(r))):
        return "indices into the *original* rewards, not into the sorted copy: map back with argsort"
    return "candidates are sorted[:k] + sorted[n - m + k:] for k = 0..m; compare their population variances (np.var)"


@exercise("03.3", "implement", "advantages on the kept subset", "7. What the three rules keep", "kept_advantages", """
    **Exercise 03.3 (implement).** The update standardises each prompt's rewards over the *kept* rows, not over
    all n. Write `kept_advantages(rewards, n, kept)`. The check compares with
    `minipods.grpo.group_advantages` on the kept rows over random batches (m = 1, m = n, all-equal groups).
    """, '''
    import numpy as np
    from minipods.downsample import select_groups

    def kept_advantages(rewards, n, kept):
        """Advantages (len(kept),) of the kept rows. rewards (P*n,): prompt g owns rows g*n .. g*n + n - 1; kept: the
        flat indices of the m rows kept per prompt (ascending). Each kept reward minus the mean of its prompt's kept
        rewards, divided by their sample std (divisor m - 1) + 1e-4; exactly 0 where a prompt's kept rewards are equal."""
        raise NotImplementedError("03.3: your code here")

    rewards = np.array([1.1, 0.0, 0.05, 1.1, 0.0, 0.1, 1.075, 0.025,   0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0])
    kept = select_groups(rewards, 8, 4, "max_variance")  # 2 prompts x 8 rollouts, 4 kept each
    print("kept rows", kept, "rewards", rewards[kept].tolist())
    ''')
def _j_03_3(fn):
    import torch
    from minipods.downsample import select_groups
    from minipods.grpo import group_advantages
    rng = _rng(33)
    cases = 0
    for i in range(120):
        P, n = int(rng.integers(1, 5)), int(rng.integers(1, 11))
        m = [1, n][i % 2] if i < 20 else int(rng.integers(1, n + 1))
        r = rng.integers(0, 2, P * n) + 0.025 * rng.integers(0, 5, P * n) if i % 3 else rng.integers(0, 2, P * n) * 1.0
        kept = select_groups(r, n, m, "max_variance")
        got = _array(_call(fn, r.copy(), n, list(kept)), (len(kept),))
        group = torch.tensor([k // n for k in kept])
        want = group_advantages(torch.tensor(r[kept]), group).numpy().astype(np.float64)
        cases += 1
        if np.isnan(got).any() or not np.allclose(got, want, atol=1e-3):
            return False, f"on rewards {np.round(r, 3).tolist()} (n = {n}, kept {kept}) your advantages are " \
                          f"{np.round(got, 3).tolist()}, expected {np.round(want, 3).tolist()}. Hint: {_adv_hint(r, n, kept, got)}"
    return True, f"your advantages match group_advantages on the kept rows of {cases} batches (m = 1, m = n, equal groups)"


def _adv_hint(r, n, kept, got) -> str:
    if np.isnan(got).any():
        return "equal kept rewards (or a single kept row) have no spread: their advantages are exactly 0, never NaN"

    def standardised(rows_of, ddof):  # each kept row against the rows rows_of(its row)
        out = []
        for k in kept:
            v = r[rows_of(k)]
            out.append((r[k] - v.mean()) / (v.std(ddof=ddof) + 1e-4) if len(v) > 1 and np.ptp(v) > 0 else 0.0)
        return np.array(out)
    kept_rows = (lambda k: [j for j in kept if j // n == k // n])
    all_rows = (lambda k: list(range(k // n * n, k // n * n + n)))
    if np.allclose(got, standardised(kept_rows, 0), atol=1e-3):
        return "that divides by the population std (divisor m); GRPO uses the sample std (divisor m - 1)"
    if any(np.allclose(got, standardised(all_rows, d), atol=1e-3) for d in (1, 0)):
        return "you normalised over all n rollouts of the prompt; PODS normalises over the m kept ones"
    return "per prompt: (r - mean of its kept rewards) / (sample std of its kept rewards + 1e-4)"


SECTION7_R = [1.1, 0.0, 0.05, 1.1, 0.0, 0.1, 1.075, 0.025, 0.0, 1.1, 0.05, 0.0, 1.1, 0.025, 0.1, 0.0]


@exercise("03.4", "observe", "how often one random draw misses every right answer", "7. What the three rules keep",
          "seeds_without_correct", """
    **Exercise 03.4 (observe).** The random rule keeps a uniform draw of m = 4 of section 7's sixteen rollouts.
    Change `SEED` from 0 to 9, rerun each time, and count: at how many of these ten seeds does it keep no right
    answer (no reward >= 1)? Compare with the probability the section printed.
    """, '''
    import numpy as np
    from minipods.downsample import random_subset

    r = np.array([1.1, 0.0, 0.05, 1.1, 0.0, 0.1, 1.075, 0.025, 0.0, 1.1, 0.05, 0.0, 1.1, 0.025, 0.1, 0.0])
    SEED = 0  # change me: 0, 1, ..., 9
    keep = random_subset(r, 4, SEED)
    print(f"seed {SEED}: random keeps {r[keep].tolist()}: {int((r[keep] >= 1).sum())} right")
    seeds_without_correct = None  # your answer: at how many of the seeds 0-9 are none of the kept right?
    ''')
def _j_03_4(answer):
    from minipods.downsample import random_subset
    r = np.array(SECTION7_R)
    x = _number(answer)
    want = sum(int((r[random_subset(r, 4, s)] >= 1).sum()) == 0 for s in range(10))
    expect = math.comb(11, 4) / math.comb(16, 4)
    if x == want:
        return True, f"right: {want} of 10 seeds keep no right answer (chance {expect:.2f} each): every such step " \
                     "is silent for this prompt, while max-variance never is when the 16 differ"
    return False, f"you answered {x:g}: rerun with each SEED from 0 to 9 and count the lines with 0 right " \
                  f"(C(11,4)/C(16,4) = {expect:.2f} predicts about {10 * expect:.0f} in 10; count what these seeds drew)"


@exercise("03.5", "predict", "trains on m, listens to n", "9. When groups go silent", "silent_prediction", """
    **Exercise 03.5 (predict, then run).** A hard prompt with pass rate p = 0.1. GRPO samples n = m = 4
    rollouts; PODS samples n = 16 and keeps m = 4 by max-variance. Predict the probability that PODS's kept
    group is silent (all rewards equal), then run the next cell.
    """, '''
    silent_prediction = None  # your prediction: P(PODS's kept group of 4 is silent), n = 16, p = 0.1
    ''', '''
    from minipods.analysis.gradients import predicted_silent_fraction

    for n in (4, 16):
        print(f"n = {n:2d}: all {n} rewards equal with probability {predicted_silent_fraction(0.1, n):.3f}")
    ''')
def _j_03_5(answer):
    from minipods.analysis.gradients import predicted_silent_fraction
    truth = predicted_silent_fraction(0.1, 16)
    return _predict(answer, truth, 0.03, ".3f", gaps=[
        (predicted_silent_fraction(0.1, 4), "That is a group of 4 (GRPO's). Max-variance keeps a right and a wrong "
                                            "answer whenever the 16 contain both, so PODS is silent only when all 16 agree"),
        (0.0, "PODS can still be silent: when all 16 are wrong (0.9^16) no subset differs")],
        why="0.9^16 + 0.1^16: PODS trains on 4 but is silent only as often as a group of 16")


# ================================================================ 04 · the GRPO update
@exercise("04.1", "observe", "when clipping stops the gradient", "2. The objective", "no_gradient", """
    **Exercise 04.1 (observe).** With `update_epochs > 1` the ratio ρ moves away from 1. Change `RHO` (0.7, 0.9,
    1.1, 1.3) and `A` (+1, −1) and rerun: for which of these eight pairs is the gradient of `grpo_loss` (ε = 0.2)
    exactly 0? Answer as a list of pairs, e.g. `[(0.7, 1.0)]`.
    """, '''
    import torch
    from minipods.grpo import grpo_loss

    RHO, A = 1.3, 1.0  # change me: RHO in 0.7, 0.9, 1.1, 1.3; A in +1.0, -1.0
    logp = torch.log(torch.tensor([[RHO]])).requires_grad_()  # old log-prob 0, so the ratio is RHO
    loss, _ = grpo_loss(logp, torch.zeros(1, 1), torch.tensor([A]), torch.ones(1, 1), num_tokens=1)
    loss.backward()
    print(f"rho = {RHO}, A = {A:+.0f}: d loss / d log p = {float(logp.grad):+.3f}")
    no_gradient = None  # your answer: the (RHO, A) pairs whose gradient is 0
    ''')
def _j_04_1(answer):
    import torch
    from minipods.grpo import grpo_loss
    want = set()
    for rho, a in itertools.product((0.7, 0.9, 1.1, 1.3), (1.0, -1.0)):
        logp = torch.log(torch.tensor([[rho]])).requires_grad_()
        grpo_loss(logp, torch.zeros(1, 1), torch.tensor([a]), torch.ones(1, 1), num_tokens=1)[0].backward()
        if float(logp.grad) == 0.0:
            want.add((rho, a))
    try:
        got = {(round(float(r), 2), math.copysign(1.0, float(a))) for r, a in answer}
    except (TypeError, ValueError):
        raise StudentError(f"answer with a list of (RHO, A) pairs, e.g. [(0.7, 1.0)], got {answer!r}") from None
    if got == want:
        return True, f"right: {sorted(want)}: beyond 1 ± ε in the direction A favours, the clipped term wins the min " \
                     "and the objective stops pushing; against it, the gradient stays"
    extra = got - want
    if any(abs(r - 1) < 0.2 for r, _ in extra):
        return False, "inside [0.8, 1.2] nothing is clipped: every pair there has a gradient"
    if extra:
        return False, f"{sorted(extra)} still have a gradient: with A > 0 and ρ < 1 − ε (or A < 0 and ρ > 1 + ε) the " \
                      "unclipped term is the smaller one, so the min keeps it and the objective still pulls ρ back"
    return False, f"you left out {sorted(want - got)}: run those settings and read the gradient"


@exercise("04.2", "predict", "sequence-level versus token-level weights", "2b. Three ways to average over tokens",
          "ratio_prediction", """
    **Exercise 04.2 (predict, then run).** One prompt, two kept completions: 10 tokens with advantage +1 and
    40 tokens with advantage −1. Predict how many times larger a token of the *short* answer weighs in the
    gradient under `loss_type="grpo"` (each completion's token mean, then the mean) than under `"dapo"` (every
    token alike), then run the next cell.
    """, '''
    ratio_prediction = None  # your prediction: (weight of a short-answer token, grpo) / (the same, dapo)
    ''', '''
    import torch
    from minipods.grpo import grpo_loss

    lens = torch.tensor([10, 40])
    mask = (torch.arange(40)[None, :] < lens[:, None]).float()  # (2, 40)
    for loss_type in ("grpo", "dapo"):
        logp = torch.zeros(2, 40, requires_grad=True)
        loss, _ = grpo_loss(logp, logp.detach(), torch.tensor([1.0, -1.0]), mask, num_tokens=int(mask.sum()),
                            loss_type=loss_type, num_rows=2)
        loss.backward()
        print(f"{loss_type}: a token of the short answer weighs {float(-logp.grad[0, 0]):.4f}, "
              f"of the long one {float(logp.grad[1, 0]):.4f}")
    ''')
def _j_04_2(answer):
    import torch
    from minipods.grpo import grpo_loss
    mask = (torch.arange(40)[None, :] < torch.tensor([10, 40])[:, None]).float()
    w = {}
    for lt in ("grpo", "dapo"):
        logp = torch.zeros(2, 40, requires_grad=True)
        grpo_loss(logp, logp.detach(), torch.tensor([1.0, -1.0]), mask, int(mask.sum()), loss_type=lt, num_rows=2)[0].backward()
        w[lt] = float(-logp.grad[0, 0])
    truth = w["grpo"] / w["dapo"]
    return _predict(answer, truth, 0.05, ".2f", rel=True, gaps=[
        (1 / truth, "Inverted: grpo gives each answer the same total weight, so the short one's 10 tokens share "
                    "1/(2 x 10) each, against 1/50 under dapo"),
        (4.0, "40/10 is how grpo weighs a short-answer token against a long-answer one; against dapo it is 1/20 vs 1/50"),
        (1.0, "The reductions differ as soon as lengths differ")],
        why="grpo: 1/(2 x 10) per token; dapo: 1/50: a short answer's tokens weigh more per token under grpo")


@exercise("04.3", "implement", "per-completion versus token-mean loss", "2b. Three ways to average over tokens", "reduce", """
    **Exercise 04.3 (implement).** Write the two loss reductions minipods offers. The check compares with
    `minipods.grpo.reduce_loss` (the whole batch: num_tokens = the real tokens, num_rows = B) on random
    per-token terms and masks, both loss types.
    """, '''
    import torch

    def reduce(per_token, mask, loss_type):
        """The scalar loss from per-token terms (B, C) and the 0/1 mask (B, C) of real tokens. "dapo": the sum over
        real tokens / their number. "grpo": each completion's mean over its real tokens, then the mean over the B."""
        raise NotImplementedError("04.3: your code here")
    ''')
def _j_04_3(fn):
    import torch
    from minipods.grpo import reduce_loss
    g = torch.Generator().manual_seed(43 + 1000 * GRADING_SEED)
    cases = 0
    for i in range(80):
        B, C = int(torch.randint(1, 7, (1,), generator=g)), int(torch.randint(1, 13, (1,), generator=g))
        lens = torch.randint(1, C + 1, (B,), generator=g)
        mask = (torch.arange(C)[None, :] < lens[:, None]).float()
        pt = torch.randn(B, C, generator=g)
        for lt in ("dapo", "grpo"):
            cases += 1
            got = _number(_call(fn, pt.clone(), mask.clone(), lt))
            want = float(reduce_loss(pt, mask, lt, mask.sum(), B))
            if abs(got - want) > 1e-5 * (1 + abs(want)):
                return False, f"{lt} on lengths {lens.tolist()} (C = {C}): you give {got:.5f}, expected {want:.5f}. " \
                              f"Hint: {_reduce_hint(pt, mask, lt, got)}"
    return True, f"your reductions match minipods.grpo.reduce_loss on {cases} batches (one token, full rows, ragged)"


def _reduce_hint(pt, mask, lt, got) -> str:
    s = pt * mask
    token_mean, row_mean = float(s.sum() / mask.sum()), float((s.sum(1) / mask.sum(1)).mean())
    if lt == "grpo" and abs(got - token_mean) < 1e-5 * (1 + abs(token_mean)):
        return "that is the token mean; grpo takes each completion's own token mean, then the mean over completions"
    if lt == "dapo" and abs(got - row_mean) < 1e-5 * (1 + abs(row_mean)):
        return "that is the completion mean; dapo divides the sum over every real token by their number"
    if any(abs(got - float(v)) < 1e-5 * (1 + abs(float(v))) for v in (pt.mean(), s.sum() / s.numel(), (s.sum(1) / s.shape[1]).mean())):
        return "padding counted: sum over real tokens only (multiply by the mask) and divide by real-token counts"
    return "mask first (per_token * mask); dapo: sum / mask.sum(); grpo: (row sums / row lengths).mean()"


@exercise("04.4", "predict", "AdamW's first step", "3. One real update, and the KL through the disabled adapter",
          "step_prediction", """
    **Exercise 04.4 (predict, then run).** A LoRA B entry starts at 0 and gets a gradient of 3e-6 in the first
    update. Predict how far one AdamW step (lr = 2e-4, betas 0.9 and 0.99, weight decay 0.1) moves it, then run
    the next cell.
    """, '''
    step_prediction = None  # your prediction: |change of the weight| after one step
    ''', '''
    import torch

    w = torch.zeros(1, requires_grad=True)  # a LoRA B entry: 0 at the start
    opt = torch.optim.AdamW([w], lr=2e-4, betas=(0.9, 0.99), weight_decay=0.1)
    w.grad = torch.tensor([3e-6])
    opt.step()
    print(f"the weight moved by {float(w.detach().abs()):.3e} (lr 2e-4, gradient 3e-6)")
    ''')
def _j_04_4(answer):
    lr, g, eps = 2e-4, 3e-6, 1e-8  # torch.optim.AdamW's first step: bias-corrected m^ = g, v^ = g^2; decay x 0 = 0
    truth = lr * g / (math.sqrt(g * g) + eps)
    return _predict(answer, truth, 0.1, ".3e", rel=True, gaps=[
        (lr * g, "lr x gradient is plain SGD. Adam divides by the gradient's running size: at the first step "
                 "m^ = g and v^ = g^2, so the move is lr x g / (|g| + eps), about lr whatever g")],
        why="lr x g / (|g| + 1e-8): about lr, whatever the gradient's size")


# ================================================================ 05 · PODS vs GRPO
def _seed_study(rng, k: int, equal_diffs: bool = False) -> dict:
    """seed -> (GRPO's 0/1 per question, PODS's), with a seed effect and a different question count per seed."""
    out = {}
    for s in range(k):
        q = 40 if equal_diffs else int(rng.integers(20, 90))
        base = 0.5 if equal_diffs else rng.uniform(0.2, 0.7)
        shift = 0.1 if equal_diffs else rng.normal(0.03, 0.12)
        a = (np.arange(q) < round(base * q)).astype(int) if equal_diffs else (rng.random(q) < base).astype(int)
        b = (np.arange(q) < round((base + shift) * q)).astype(int) if equal_diffs else \
            (rng.random(q) < np.clip(base + shift, 0, 1)).astype(int)
        out[s] = (a.tolist(), b.tolist())
    return out


@exercise("05.1", "implement", "a seed-level interval", "2. The mean over seeds and its Student-t interval", "seed_interval", """
    **Exercise 05.1 (implement).** A study gives, per seed (one training run per arm), each arm's 0/1 answers to
    that seed's held-out questions. The run is the unit: write `seed_interval(per_seed)`, the mean over seeds of
    PODS's accuracy minus GRPO's with its 95% Student-t interval over seeds (`t975(df)` gives the quantile).
    The check compares with minipods' `mean_interval` on random studies of 2 to 10 seeds.
    """, '''
    import math
    from minipods.stats import t975  # Student's t, two-sided 95%, for df degrees of freedom

    def seed_interval(per_seed):
        """per_seed: {seed: (grpo, pods)}, each a list of 0/1 per question of that seed. Returns (mean, lo, hi): the
        mean over seeds of (PODS's accuracy - GRPO's) and its 95% t-interval over seeds (sample sd, k - 1 df)."""
        raise NotImplementedError("05.1: your code here")
    ''')
def _j_05_1(fn):
    mean_interval = _stats().mean_interval
    rng = _rng(51)
    studies = [_seed_study(rng, int(rng.integers(2, 11))) for _ in range(40)] + [_seed_study(rng, 2, equal_diffs=True)]
    for st in studies:
        got = _call(fn, {s: (list(a), list(b)) for s, (a, b) in st.items()})
        try:
            mean, lo, hi = (float(v) for v in got)
        except (TypeError, ValueError):
            raise StudentError(f"return (mean, lo, hi), got {_short(got)}") from None
        diffs = [np.mean(b) - np.mean(a) for a, b in st.values()]
        want = mean_interval(diffs)
        if max(abs(mean - want["mean"]), abs(lo - want["lo"]), abs(hi - want["hi"])) > 2e-3:
            return False, f"on {len(st)} seeds with per-seed differences {np.round(diffs, 3).tolist()} you give " \
                          f"{mean:+.3f} [{lo:+.3f}, {hi:+.3f}], expected {want['mean']:+.3f} [{want['lo']:+.3f}, " \
                          f"{want['hi']:+.3f}]. Hint: {_interval_hint(st, diffs, mean, lo, hi)}"
    return True, f"your interval matches mean_interval over seeds on {len(studies)} studies of 2-10 seeds"


def _interval_hint(st, diffs, mean, lo, hi) -> str:
    k, d, t = len(diffs), np.asarray(diffs), _stats().t975(len(diffs) - 1)
    half, sd = (hi - lo) / 2, d.std(ddof=1)
    if abs(half - 1.96 * sd / math.sqrt(k)) < 2e-3:
        return f"with k = {k} seeds use Student's t with k - 1 = {k - 1} df ({t}), not 1.96"
    if abs(half - t * d.std(ddof=0) / math.sqrt(k)) < 2e-3:
        return "use the sample sd (divisor k - 1), not the population sd"
    pooled = np.mean(np.concatenate([b for _, b in st.values()])) - np.mean(np.concatenate([a for a, _ in st.values()]))
    if sd == 0 < half:  # say what the check saw, not a guess at why
        return f"these {k} per-seed differences are all equal, so their t-interval has width 0; yours is " \
               f"{hi - lo:.3f} wide: is it computed over the k per-seed differences (a pooled interval is not)?"
    if abs(mean - pooled) < 1e-9 and abs(pooled - d.mean()) > 1e-6:
        return "a pooled interval counts every question as independent; the run (seed) is the unit: one difference " \
               "per seed, then the t-interval over those k differences"
    return "mean ± t975(k - 1) x sd / sqrt(k), over the k per-seed differences"


@exercise("05.2", "predict", "the break-even gain on the paper's GPU", "6. The break-even gain, here and on the paper's L40S",
          "gain_prediction", """
    **Exercise 05.2 (predict, then run).** On the paper's L40S a GRPO step (n = m = 16) takes 7.5 s and a PODS
    step (n = 64 → m = 16) 10.1 s; section 6 read off the break-even gain at n/m = 4. With rollout time linear
    in the rollouts (section 6's first reading), predict the break-even gain of PODS at n = 128 → m = 16: how
    many GRPO steps one PODS step must then be worth. Then run the next cell.
    """, '''
    gain_prediction = None  # your prediction: the break-even gain at n = 128, m = 16
    ''', '''
    from minipods.measure import costmodel

    paper = costmodel.paper_l40s()  # the two step times: GRPO 16 -> 16, PODS 64 -> 16 (one prompt a step)
    b_r = (paper["pods_s"] - paper["grpo_s"]) / (paper["n"] - paper["m"])  # s per extra rollout
    for n in (64, 128):
        t_pods = paper["grpo_s"] + b_r * (n - paper["m"])
        print(f"n = {n:3d} -> m = 16: PODS step {t_pods:.2f} s, GRPO step {paper['grpo_s']} s: break-even gain "
              f"{t_pods / paper['grpo_s']:.3f}")
    ''')
def _j_05_2(answer):
    from minipods.measure import costmodel
    p = costmodel.paper_l40s()
    ratio = lambda n: 1 + (n - p["m"]) * (p["pods_s"] - p["grpo_s"]) / ((p["n"] - p["m"]) * p["grpo_s"])  # noqa: E731
    truth = ratio(128)
    return _predict(answer, truth, 0.02, ".3f", gaps=[
        (1 / truth, "Inverted: PODS pays when gain > T_PODS / T_GRPO, a ratio above 1"),
        (ratio(64), "That is n = 64, the paper's own pair: at n = 128 PODS generates 112 extra rollouts, not 48"),
        (2 * ratio(64), "Doubling n does not double the step: GRPO's 7.5 s stays; only the extra rollouts grow, "
                        "from 48 to 112"),
        (1 + 2 * (ratio(64) - 1), "The extra rollouts are n - m: 48 at n = 64, 112 (not 96) at n = 128")],
        why="T_PODS / T_GRPO = (7.5 + 112 x 2.6 / 48) / 7.5: each further multiple of m adds 0.116 GRPO steps")


def _cost_models(rng):
    from minipods.measure.costmodel import CostModel, Line
    out = [CostModel(Line(0.5, 0.0), Line(1.0, 0.2), 2.0)]  # extra rollouts cost nothing measurable
    for _ in range(60):
        out.append(CostModel(Line(rng.uniform(0, 2), rng.uniform(0.01, 0.5)), Line(rng.uniform(0, 3), rng.uniform(0.05, 1.0)),
                             rng.uniform(0, 5)))
    return out


@exercise("05.3", "implement", "the break-even n of the cost model", "6. The break-even gain, here and on the paper's L40S",
          "n_max", """
    **Exercise 05.3 (implement).** With linear phases, rollout(k) = a_r + b_r k and update(k) = a_u + b_u k, plus a
    fixed cost per step, a GRPO step is fixed + rollout(P m) + update(P m) and a PODS step fixed + rollout(P n) +
    update(P m). Write `n_max(cm, m, prompts, gain)`: the largest n (a real number) at which PODS still pays when
    one PODS step is worth `gain` GRPO steps. The check compares with `CostModel.break_even(...)["n_max"]` on
    random lines.
    """, '''
    def n_max(cm, m, prompts, gain):
        """cm: a minipods.measure.costmodel.CostModel (cm.rollout.a, cm.rollout.b, cm.update.a, cm.update.b, cm.fixed).
        The n at which gain x T_GRPO = T_PODS(n); float('inf') when extra rollouts cost nothing (cm.rollout.b <= 0)."""
        raise NotImplementedError("05.3: your code here")
    ''')
def _j_05_3(fn):
    rng = _rng(53)
    cases = 0
    for cm in _cost_models(rng):
        for _ in range(3):
            m, P, gain = int(rng.integers(1, 33)), int(rng.integers(1, 9)), float(rng.uniform(1, 3))
            cases += 1
            got = _number_or_inf(_call(fn, cm, m, P, gain))
            want = cm.break_even(m, m, P, gain)["n_max"]
            if not (got == want or math.isfinite(want) and abs(got - want) <= 1e-9 * (1 + abs(want))):
                return False, f"for rollout {cm.rollout.a:.2f} + {cm.rollout.b:.3f} k, update {cm.update.a:.2f} + " \
                              f"{cm.update.b:.3f} k, fixed {cm.fixed:.2f}, m = {m}, P = {P}, gain {gain:.2f}: you give " \
                              f"{got:.3f}, expected {want:.3f}. Hint: {_nmax_hint(cm, m, P, gain, got)}"
    return True, f"your n_max matches CostModel.break_even on {cases} random cost models (a free rollout line included)"


def _number_or_inf(x) -> float:
    try:
        return float(x) if float(x) == math.inf else _number(x)
    except (TypeError, ValueError):
        raise StudentError(f"expected a number, got {x!r}") from None


def _nmax_hint(cm, m, P, gain, got) -> str:
    if cm.rollout.b <= 0:
        return "when extra rollouts cost nothing (rollout.b <= 0) every n pays: return float('inf')"
    T = cm.step_seconds(m, m, P)["grpo"]
    u, b = cm.update(P * m), cm.rollout.b
    variants = {"the fixed cost belongs to both steps: it stays in gain x T_GRPO and comes off T_PODS":
                (gain * (T - cm.fixed) - u - cm.rollout.a) / (b * P),
                "n rollouts per prompt means P x n generated: divide by b_r x P": (gain * T - cm.fixed - u - cm.rollout.a) / b,
                "a PODS step is worth `gain` GRPO steps: compare T_PODS(n) with gain x T_GRPO, not T_GRPO":
                (T - cm.fixed - u - cm.rollout.a) / (b * P),
                "rollout(P n) = a_r + b_r P n: its intercept a_r is part of T_PODS too": (gain * T - cm.fixed - u) / (b * P)}
    for hint, v in variants.items():
        if abs(got - v) <= 1e-6 * (1 + abs(v)):
            return hint
    return "solve fixed + a_r + b_r P n + update(P m) = gain x T_GRPO for n"


@exercise("05.4", "observe", "how far the paper's n could go", "6. The break-even gain, here and on the paper's L40S",
          "largest_paying_n", """
    **Exercise 05.4 (observe).** The L40S step-cost lines fitted to the paper's 80 runs
    (`costmodel.paper_l40s_model()`: a fixed 4.4 s per step, then seconds per generated and per kept rollout).
    Suppose one PODS step is worth 2 GRPO steps at any n. Change `N` (32, 64, 128, 256, 512) and rerun: which is the
    largest of these at which PODS still pays?
    """, '''
    from minipods.measure import costmodel

    N = 64  # change me: 32, 64, 128, 256, 512
    r = costmodel.paper_l40s_model().break_even(N, 16, prompts=1, gain=2.0)
    print(f"n = {N} -> m = 16: a PODS step {r['pods_s']:.1f} s vs GRPO {r['grpo_s']:.1f} s; break-even gain "
          f"{r['break_even_gain']:.2f}: PODS {'pays' if r['pays'] else 'does not pay'} at gain 2")
    largest_paying_n = None  # your answer: the largest of 32, 64, 128, 256, 512 at which PODS pays
    ''')
def _j_05_4(answer):
    from minipods.measure import costmodel
    x = _number(answer)
    cm = costmodel.paper_l40s_model()
    want = max(n for n in (32, 64, 128, 256, 512) if cm.break_even(n, 16, 1, gain=2.0)["pays"])
    n_max = cm.break_even(16, 16, 1, gain=2.0)["n_max"]
    if x == want:
        return True, f"right: n = {want} (PODS pays up to n = {n_max:.0f}); the step's fixed cost makes a GRPO step " \
                     "dear enough that a doubled gain buys many extra rollouts"
    return False, f"you answered {x:g}: " + ("at gain 2, n = 64 is not the limit: try larger N" if x < want else
                                            f"at n = {x:g} PODS's step costs more than 2 GRPO steps: rerun with N = {x:g}")


# ================================================================ 06 · the paper's runs
@exercise("06.1", "predict", "the floor of a sign-flip p", "0. The settings", "floor_prediction", """
    **Exercise 06.1 (predict, then run).** The exact sign-flip test counts, among the 2^k ways of flipping the
    signs of k per-seed differences, those whose |mean| is at least the observed one. Predict the smallest p it
    can return with k = 5 seeds, whatever the differences, then run the next cell.
    """, '''
    floor_prediction = None  # your prediction: the smallest possible sign-flip p with 5 seeds
    ''', '''
    from minipods.stats import sign_flip_p

    for k in (3, 5, 10):
        print(f"{k:2d} seeds all positive (+1, +2, ... +{k} points): p = {sign_flip_p([0.01 * (i + 1) for i in range(k)]):.4f}")
    ''')
def _j_06_1(answer):
    truth = _stats().sign_flip_p([1.0, 2.0, 3.0, 4.0, 5.0])
    return _predict(answer, truth, 1e-4, ".4f", gaps=[
        (truth / 2, "Two-sided: the all-negative pattern is as extreme as the all-positive one, so 2 / 2^5"),
        (0.05, "0.05 is a threshold, not the floor; with 5 seeds no result can go below 2 / 2^5")],
        why="2 / 2^k: five seeds cannot reach p < 0.05 twice over; ten runs reach 0.002")


@exercise("06.2", "implement", "the exact sign-flip p", "1. GSM8K accuracy against wall-clock hours: GRPO vs PODS",
          "sign_flip", """
    **Exercise 06.2 (implement).** Write the exact sign-flip p of "the mean difference is 0". The check compares
    with minipods' `sign_flip_p` on random differences of 1 to 10 seeds (zeros, ties, all equal).
    """, '''
    import itertools

    def sign_flip(diffs):
        """Exact two-sided p: the share of the 2^k sign patterns (s_1 d_1, ..., s_k d_k), s = +-1, whose |mean| is at
        least the observed |mean| (ties count as at least)."""
        raise NotImplementedError("06.2: your code here")
    ''')
def _j_06_2(fn):
    sign_flip_p = _stats().sign_flip_p
    rng = _rng(62)
    cases = [[0.0, 0.0], [0.25], [0.125, 0.125, 0.125], [0.0, 0.25, -0.25]]
    cases += [(rng.integers(-8, 9, int(rng.integers(1, 11))) / 64).tolist() for _ in range(30)]
    cases += [rng.normal(size=int(rng.integers(1, 11))).tolist() for _ in range(10)]
    for d in cases:
        got, want = _number(_call(fn, list(d))), sign_flip_p(d)
        if abs(got - want) > 1e-9:
            hint = ("one-sided: count the patterns whose |mean| reaches the observed |mean|, on either side"
                    if abs(got - _one_sided(d)) < 1e-9 else
                    "ties count: a pattern whose |mean| equals the observed one is as extreme (>=, not >)"
                    if got < want else "enumerate all 2^k sign patterns (itertools.product((1, -1), repeat=k))")
            return False, f"on differences {d} you give {got:.4f}, expected {want:.4f}. Hint: {hint}"
    return True, f"your p matches sign_flip_p on {len(cases)} sets of 1-10 differences (zeros, ties, all equal)"


def _one_sided(d) -> float:
    obs = sum(d)
    pats = list(itertools.product((1, -1), repeat=len(d)))
    return sum(sum(s * x for s, x in zip(p, d)) >= obs - 1e-12 for p in pats) / len(pats)


@exercise("06.3", "observe", "how the paper's way moves with its target", "2. Time to GRPO's peak: \"at least 1.7x faster\"?",
          "speedup_at_97", """
    **Exercise 06.3 (observe).** The paper says PODS "achieves the peak test accuracy of vanilla GRPO at least
    1.7x faster". The cell reads the ten runs' mean curves against the target `FRAC` x GRPO's mean-curve peak
    (1.0: the peak itself, the paper's words); section 2 read them at 1.0, 0.995 and 0.99. Change `FRAC` to
    0.98, then 0.97, and rerun. Answer: the speed-up at FRAC = 0.97? What does that say about a reading on
    checkpoints half an hour apart?
    """, '''
    from minipods.analysis import paper_runs as P
    from minipods.analysis.summary import time_to_target

    FRAC = 1.0  # change me: 0.98, 0.97
    GRPO, PODS = "GSM8K-512-16-16", "GSM8K-512-64-16"
    runs = P.only(P.paper_study("gsm8k"), [GRPO, PODS])
    curves = {0: {a: P.mean_curve(runs, a) for a in (GRPO, PODS)}}  # the mean curves as one pseudo-run
    peak = max(p.accuracy for p in curves[0][GRPO])
    t = time_to_target(curves, GRPO, target=FRAC * peak)["arms"]
    g, q = (t[a]["per_seed"][0]["seconds"] / 3600 for a in (GRPO, PODS))
    print(f"target {FRAC:.1%} of GRPO's peak: GRPO at {g:g} h, PODS at {q:g} h: {g / q:.2f}x sooner")
    speedup_at_97 = None  # your answer: the speed-up with FRAC = 0.97
    ''')
def _j_06_3(answer):
    x = _number(answer)
    at = {f: _mean_curve_speedup(f) for f in (0.97, 0.98, 0.99, 0.995, 1.0)}
    if abs(x - at[0.97]) <= 0.05:
        return True, f"right: {at[0.97]:.2f}x at 97% of the peak, " + ", ".join(
            f"{at[f]:.2f}x at {f:.1%}" for f in (0.98, 0.99, 0.995)) + f", {at[1.0]:.2f}x at the peak itself: on " \
            "half-hourly checkpoints the reading jumps as the target moves by a point or two (a knife-edge)"
    same = [f for f in (0.98, 0.99, 0.995, 1.0) if abs(x - at[f]) <= 0.05]
    if same:
        return False, f"{x:.2f}x is the reading at FRAC = {' and '.join(f'{f:g}' for f in same)}: set FRAC = 0.97 and rerun"
    return False, f"you answered {x:.2f}: set FRAC = 0.97, rerun, and read the speed-up it prints"


def _mean_curve_speedup(frac: float) -> float:
    from minipods.analysis import paper_runs as P
    from minipods.analysis.summary import time_to_target
    g, q = "GSM8K-512-16-16", "GSM8K-512-64-16"
    runs = P.only(P.paper_study("gsm8k"), [g, q])
    curves = {0: {a: P.mean_curve(runs, a) for a in (g, q)}}
    t = time_to_target(curves, g, target=frac * max(p.accuracy for p in curves[0][g]))["arms"]
    return t[g]["per_seed"][0]["seconds"] / t[q]["per_seed"][0]["seconds"]


@exercise("06.4", "implement", "time to target from an accuracy curve", "2. Time to GRPO's peak: \"at least 1.7x faster\"?",
          "time_to_reach", """
    **Exercise 06.4 (implement).** The rule `time_to_target` applies to each run: an arm is at the target at its
    first evaluation within one evaluation's standard error below it, sqrt(t (1 − t) / n) for target t and n
    graded answers. Write it for one curve. The check compares with `minipods.analysis.summary.time_to_target`
    on random learning curves (never reached, reached at once, noisy).
    """, '''
    import math

    def time_to_reach(curve, target, n):
        """curve: [(seconds, accuracy), ...] in time order; n: answers graded per evaluation. The seconds of the first
        evaluation with accuracy >= target - sqrt(target (1 - target) / n), or None if no evaluation gets there."""
        raise NotImplementedError("06.4: your code here")
    ''')
def _j_06_4(fn):
    from minipods.analysis.summary import Point, time_to_target
    rng = _rng(64)
    cases = 0
    for i in range(120):
        k, n = int(rng.integers(1, 9)), int(rng.choice([50, 128, 1319]))
        acc = np.clip(0.2 + np.cumsum(rng.normal(0.05, 0.06, k)), 0, 1)
        secs = np.cumsum(rng.uniform(100, 400, k))
        target = float(rng.uniform(0.2, 0.6)) if i % 4 else min(float(acc.max()) + 0.2, 0.999)  # every 4th: never
        pts = [Point(float(s), j + 1, float(a), n) for j, (s, a) in enumerate(zip(secs, acc))]
        want = time_to_target({0: {"arm": pts}}, "arm", target=target)["arms"]["arm"]["per_seed"][0]["seconds"]
        curve = [(float(s), float(a)) for s, a in zip(secs, acc)]
        got = _call(fn, list(curve), target, n)
        cases += 1
        if not (got is None and want is None or got is not None and want is not None and abs(_number(got) - want) < 1e-6):
            return False, f"curve {[(round(s), round(a, 3)) for s, a in curve]}, target {target:.3f}, n = {n}: you give " \
                          f"{got!r}, expected {want!r}. Hint: {_ttt_hint(curve, target, n, got)}"
    return True, f"your times match summary.time_to_target on {cases} curves (never reached, at the first evaluation, noisy)"


def _ttt_hint(curve, target, n, got) -> str:
    tol = math.sqrt(target * (1 - target) / n)
    strict = next((s for s, a in curve if a >= target), None)
    last = [s for s, a in curve if a >= target - tol]
    if got == strict:
        return f"the first evaluation within one standard error ({tol:.3f} here) below the target counts as reaching it"
    if last and got == last[-1]:
        return "the first evaluation that gets there, not the last"
    if isinstance(got, int) and not isinstance(got, bool) and got < len(curve):
        return "return the evaluation's training seconds, not its index"
    return "no interpolation between evaluations: the seconds of the evaluation itself, or None"


@exercise("06.5", "implement", "the time-averaged accuracy", "7. The paper's runs vs this laptop",
          "time_averaged", """
    **Exercise 06.5 (implement).** Time to target needs a threshold, a grid of evaluations and censoring; the
    time-averaged accuracy needs none: the area under accuracy against training seconds from 0 to a budget,
    divided by the budget, so every evaluation counts. Write it. The check compares with
    `minipods.analysis.summary.time_averaged` on random curves (one evaluation, a first evaluation after 0 s,
    budgets before, between and after the evaluations).
    """, '''
    def time_averaged(curve, budget):
        """curve: [(seconds, accuracy), ...] in time order; budget > 0 seconds. The area under accuracy from 0 to budget,
        divided by budget: trapezoids between evaluations; before the first evaluation its value, after the last one
        the last value; the segment that crosses the budget cut there (its accuracy interpolated linearly)."""
        raise NotImplementedError("06.5: your code here")
    ''')
def _j_06_5(fn):
    from minipods.analysis.summary import Point, time_averaged
    rng = _rng(65)
    cases = 0
    for i in range(150):
        k = int(rng.integers(1, 8))
        secs = np.maximum(np.cumsum(rng.uniform(50, 400, k)) - (50 if i % 3 else 0), 0.0)  # most start after 0 s
        acc = np.clip(0.3 + np.cumsum(rng.normal(0.03, 0.08, k)), 0, 1)
        budget = float(rng.uniform(0.2, 1.4) * secs[-1]) if secs[-1] > 0 else float(rng.uniform(10, 100))
        curve = [(float(s), float(a)) for s, a in zip(secs, acc)]
        want = time_averaged([Point(s, j, a) for j, (s, a) in enumerate(curve)], budget)
        got = _number(_call(fn, list(curve), budget))
        cases += 1
        if abs(got - want) > 1e-9:
            return False, f"curve {[(round(s), round(a, 3)) for s, a in curve]}, budget {budget:.0f} s: you give {got:.4f}, " \
                          f"expected {want:.4f}. Hint: {_avg_hint(curve, budget, got)}"
    return True, f"your time-averaged accuracy matches summary.time_averaged on {cases} curves and budgets"


def _avg_hint(curve, budget, got) -> str:
    pts = [(0.0, curve[0][1])] + curve + [(max(budget, curve[-1][0]), curve[-1][1])]
    step = sum((min(t1, budget) - t0) * y0 for (t0, y0), (t1, _) in zip(pts, pts[1:]) if t0 < budget) / budget
    if abs(got - step) < 1e-6:
        return "that holds each accuracy until the next evaluation; the area is trapezoids between evaluations"
    if abs(got - np.mean([a for _, a in curve])) < 1e-6:
        return "a plain mean of the evaluations ignores how far apart they are: weight each by the time it covers"
    if budget < curve[-1][0]:
        return "stop at the budget: cut the segment that crosses it, interpolating its accuracy there"
    return "from 0 s (the first value until the first evaluation) to the budget (the last value after the last one), " \
           "trapezoids in between, divided by the budget"


# ---------------------------------------------------------------- what each implement-check's inputs exercise
RULES = {  # exercise -> the reference's rules its generated inputs exercise (tests/test_exercises.py BROKEN: a version
    # breaking each named rule is rejected; the rules without a broken version there are listed in RULES_UNTESTED)
    "01.1": ("pads get no position", "the first real token is position 0"),
    "01.2": ("the first EOS is kept", "every token after the first EOS is 0", "any id in eos_ids ends the row"),
    "02.1": ("an <answer> block wins over other numbers", "numbers are normalised"),
    "02.2": ("a tag earns only when it occurs exactly once",),
    "03.2": ("not the top m", "every k = 0..m is scanned"),
    "03.3": ("normalise over the kept rows only", "sample std (divisor m - 1)", "equal kept rewards give 0, never NaN"),
    "04.3": ("grpo: each completion's token mean, then the mean", "padding is not counted"),
    "05.1": ("one difference per seed, not pooled", "Student's t with k - 1 df"),
    "05.3": ("the fixed cost belongs to both steps", "P x n rollouts a step", "a free rollout line: every n pays (inf)"),
    "06.2": ("two-sided", "ties count (>=)"),
    "06.4": ("within one standard error counts", "the first evaluation that reaches it"),
    "06.5": ("trapezoids between evaluations", "weighted by time, not a plain mean", "stop at the budget"),
}
RULES_UNTESTED = {"02.1": "each EXTRACT_HINTS category (####, \\boxed, no number, ...) is generated; one broken version "
                          "each is not yet written"}


# ---------------------------------------------------------------- self-test, cells
def solution_module(nb: str):
    """notebooks/solutions/sNN.py, loaded from its file (no sys.path change): SOLUTIONS and WHY."""
    name = f"exercise_solutions_s{nb}"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, Path(__file__).resolve().parent / "solutions" / f"s{nb}.py")
        sys.modules[name] = module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    return sys.modules[name]


def _solutions() -> dict:
    """id -> worked answer, from notebooks/solutions/sNN.py."""
    out = {}
    for nb in sorted({ex.notebook for ex in EXERCISES.values()}):
        out.update(solution_module(nb).SOLUTIONS)
    return out


def run_cells(ex: Exercise, upto: int | None = None) -> dict:
    """Run the exercise's code cells as written (quietly; the first `upto` only), without the check: the namespace."""
    ns = {"__name__": f"exercise_{ex.id}"}
    with contextlib.redirect_stdout(io.StringIO()):
        for cell in ex.cells[:upto]:
            exec(compile(cell, f"<exercise {ex.id}>", "exec"), ns)  # noqa: S102 (our own stub cells)
    return ns


def stub_answer(ex: Exercise):
    """The answer an untouched stub gives: its first cell (the stub) run as written, then its variable."""
    return run_cells(ex, 1)[ex.name]


def self_test() -> tuple[int, int, int]:
    """(N, passes on solutions, fails on stubs), every check run quietly."""
    sols, passed, failed = _solutions(), 0, 0
    for ex in EXERCISES.values():
        with contextlib.redirect_stdout(io.StringIO()):
            passed += ex.id in sols and _verdict(ex.id, sols[ex.id])[0] is True
            failed += _verdict(ex.id, stub_answer(ex))[0] is not True
    return len(EXERCISES), passed, failed


def cells(ex: Exercise) -> str:
    """The exercise's notebook cells in jupytext percent format: the question, then its code cells (the first
    imports `check`, so each exercise runs on its own; the last calls it)."""
    md = "\n".join(("# " + line).rstrip() for line in ex.question.splitlines())
    code = [*ex.cells[:-1], f'{ex.cells[-1]}\n\ncheck("{ex.id}", {ex.name})']
    code[0] = "from exercises import check\n" + code[0]
    return "# %% [markdown]\n" + md + "\n\n" + "\n\n".join("# %%\n" + c for c in code) + "\n"


def staged(notebooks=()) -> str:
    """Every exercise's cells, by notebook, with the section they close: what notebooks/NN_*.py hold (tested)."""
    out = ["# Exercise cells", "",
           "Printed by `python notebooks/exercises.py --cells [NN]`. Each block stands, in jupytext percent format, at the",
           "end of the named section of notebooks/NN_*.py (tests/test_exercises.py checks it is there, as printed).", ""]
    for ex in EXERCISES.values():
        if not notebooks or ex.notebook in notebooks:
            out += [f"## {ex.id} ({ex.kind}): {ex.title}", "", f"Notebook {ex.notebook}, end of section \"{ex.section}\".",
                    "", "```python", cells(ex).rstrip("\n"), "```", ""]
    return "\n".join(out)


def main(argv=None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args[:1] == ["--self-test"]:
        n, p, f = self_test()
        print(f"{n} exercises: {p} pass on solutions, {f} fail on stubs")
        return 0 if p == f == n else 1
    if args[:1] == ["--cells"]:
        print(staged(args[1:]), end="")
        return 0
    if args[:1] in (["--release"], ["--grade"]):  # the student edition, the grader: notebooks/release.py, grade.py
        name, here = args[0][2:], Path(__file__).resolve().parent
        if not (here / f"{name}.py").is_file():  # the student edition carries neither
            print(f"notebooks/exercises.py: error: {args[0]} needs {name}.py (in the repository's notebooks/)", file=sys.stderr)
            return 2
        spec = importlib.util.spec_from_file_location(f"exercises_{name}", here / f"{name}.py")
        spec.loader.exec_module(module := importlib.util.module_from_spec(spec))
        return module.main(args[1:], sys.modules[__name__])
    if args[:1] == ["--time"] and args[1:] and all(a in EXERCISES for a in args[1:]):
        sols = _solutions()
        for i in args[1:]:  # a class's compute: each exercise's cells as written, then its check on the worked answer
            t0 = time.perf_counter()
            run_cells(EXERCISES[i])
            with contextlib.redirect_stdout(io.StringIO()):
                ok = _verdict(i, sols[i])[0] is True
            print(f"{i}: {time.perf_counter() - t0:.1f} s ({'pass' if ok else 'FAIL'})")
        return 0
    if args:
        print("usage: python notebooks/exercises.py [--self-test | --cells [NN ...] | --time ID ... | --release OUT | "
              "--grade SUBMISSION... --out CSV [--seed S]]", file=sys.stderr)
        return 2
    for ex in EXERCISES.values():
        print(f"{ex.id}  {ex.kind:9s}  {ex.title}  (section: {ex.section})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
