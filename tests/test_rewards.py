import random
from decimal import Decimal

import pytest

from minipods.rewards import (
    CORRECT_REWARD, FORMAT_TAG_REWARD, FORMAT_TAGS, correctness_reward, extract_answer,
    format_reward, normalize_number, score_completions, strict_answer, strict_correct, total_reward,
)

GOOD = "<reasoning>\n6 * 3 = 18\n</reasoning>\n<answer>\n18\n</answer>"


@pytest.mark.parametrize("s, want", [
    ("1080.00", "1080"), ("$1,080.00", "1080"), (" $1,080.00. ", "1080"), ("3.50", "3.5"),
    ("-3", "-3"), ("-0", "0"), ("-0.00", "0"), ("+7", "7"), ("007", "7"), (".5", "0.5"),
    ("-.5", "-0.5"), ("5.", "5"), ("0.10", "0.1"), ("12345678901234567890123456789012345",
    "12345678901234567890123456789012345"),  # > 28 digits: Decimal context would round
    ("", None), ("abc", None), ("-", None), (".", None), ("1.2.3", None), ("1e3", None),
    ("nan", None), ("inf", None), ("1 2", None),
    (72, "72"), (Decimal("3.50"), "3.5"), (2.5, "2.5"), (1e20, "100000000000000000000"),
])
def test_normalize_number(s, want):
    assert normalize_number(s) == want


@pytest.mark.parametrize("text, want", [
    ("Natalia sold 48 + 24 = 72 clips.\n#### 72", "72"),
    ("The answer is $1,080.00.", "1080"),
    ("<answer>18</answer>", "18"),
    ("\\boxed{18}", "18"),
    ("so it is \\boxed{18}, not 20", "18"),  # step 3: boxed beats last number
    ("He lost 5 dollars, ending at -3", "-3"),
    ("<answer>\n-12.50\n</answer>", "-12.5"),
    ("pi is about 3.14", "3.14"),
    ("no number here", None),
    ("", None),
    ("#### 1,234,567", "1234567"),
    ("#### 72\nthen 99", "72"),  # the number right after ####, not the last one
    ("<answer>The total is \\boxed{7} from 3 + 4</answer>", "7"),
    ("<answer>3 then 4</answer>", "4"),
    ("<answer>5</answer> <answer>7</answer>", "7"),  # last block wins
    ("<answer>5</answer> 9 <answer>7", "5"),  # unclosed block is not a block
    ("<answer>none</answer> #### 42 ok 8", "42"),  # empty block falls through to ####
    ("<answer>none</answer> then 8", "8"),  # ... and then to the last number
    ("#### none, 8", "8"),  # #### without a number falls through
    ("<answer>4</answer> #### 9", "4"),  # answer block beats ####
    ("1234,567", "567"),  # malformed thousands grouping: not one number
    ("x" + "1" * 100, "1" * 100),
    ("x" + "1" * 101, None),  # over MAX_NUMBER_CHARS: not a plausible answer
])
def test_extract_answer(text, want):
    assert extract_answer(text) == want


def test_correctness_reward():
    assert correctness_reward(GOOD, "18") == CORRECT_REWARD == 1.0
    assert correctness_reward(GOOD, "18.0") == 1.0
    assert correctness_reward(GOOD, 18) == 1.0
    assert correctness_reward(GOOD, "19") == 0.0
    assert correctness_reward("The answer is $1,080.00.", "1080") == 1.0
    assert correctness_reward("#### 1,080", "1,080") == 1.0
    assert correctness_reward("<answer>-0</answer>", "0") == 1.0
    assert correctness_reward("<answer>2.5</answer>", Decimal("2.50")) == 1.0
    assert correctness_reward("<answer>2.5</answer>", "25") == 0.0
    assert correctness_reward("no answer", "18") == 0.0
    assert correctness_reward("", "0") == 0.0
    with pytest.raises(ValueError, match="'seven'"):
        correctness_reward(GOOD, "seven")


def test_format_reward():
    t = FORMAT_TAG_REWARD
    assert format_reward(GOOD) == pytest.approx(4 * t) == pytest.approx(0.1)
    assert format_reward("18") == 0.0
    assert format_reward("") == 0.0
    # <answer> needs a </reasoning> before it; </answer> only needs <answer>
    assert format_reward("<answer>18</answer>") == pytest.approx(t)
    assert format_reward("<reasoning>x</reasoning> 18") == pytest.approx(2 * t)
    assert format_reward("<reasoning>x <answer>18</answer>") == pytest.approx(2 * t)  # no </reasoning>
    # misordered: answer block before reasoning block
    assert format_reward("<answer>18</answer><reasoning>x</reasoning>") == pytest.approx(3 * t)
    assert format_reward("</answer><answer></reasoning><reasoning>") == pytest.approx(t)
    # duplicated <answer>: it and the tag after it (whose predecessor is ambiguous) lose credit
    assert format_reward(GOOD + "<answer>") == pytest.approx(2 * t)
    assert format_reward("<reasoning><reasoning>" + GOOD[11:]) == pytest.approx(2 * t)
    assert len(FORMAT_TAGS) == 4


def test_total_and_batch():
    assert total_reward(GOOD, "18") == pytest.approx(1.1)
    assert total_reward(GOOD, "17") == pytest.approx(0.1)
    assert total_reward("#### 18", "18") == 1.0
    out = score_completions([GOOD, "#### 18", "junk"], ["18", "18", "18"])
    assert out["correct"] == [1.0, 1.0, 0.0]
    assert out["format"] == pytest.approx([0.1, 0.0, 0.0])
    assert out["reward"] == pytest.approx([1.1, 1.0, 0.0])
    assert score_completions([], []) == {"reward": [], "correct": [], "format": []}
    with pytest.raises(ValueError, match="2 completions but 1 golds"):
        score_completions(["a", "b"], ["1"])


HOSTILE = {  # each ~1 MB
    "digits": "7" * 1_000_000,
    "digit_commas": "1," * 500_000,
    "digit_spaces": "1 " * 500_000,
    "tags": "".join(FORMAT_TAGS) * 25_000,
    "hashes": "####" * 250_000,
    "hash_digits": "#### 1" * 170_000,
    "answer_open": "<answer>" * 125_000,
    "answer_open_digits": "<answer>1" * 110_000,
    "answer_close": "</answer>" * 110_000,
    "boxed": "\\boxed{" * 140_000,
    "boxed_digits": "\\boxed{1" * 125_000,
    "dollars": "$-" * 500_000,
    "decimal_run": "1." * 500_000,
    "comma_groups": "1" + ",000" * 250_000,
    "minus_digits": "-1" * 500_000,
    "mixed": ("<answer>$1,0 #### \\boxed{-9.}</answer><reasoning>" * 20_000)[:1_000_000],
}


# what the lenient grader makes of each (extracted answer, total reward against gold "1"); every
# function in minipods.rewards is linear-time by construction (bounded slices), so these finish at once
HOSTILE_WANT = {
    "answer_close": None, "answer_open": None, "answer_open_digits": "1", "boxed": None, "boxed_digits": "1",
    "comma_groups": None, "decimal_run": "1", "digit_commas": "1", "digit_spaces": "1", "digits": None,
    "dollars": None, "hash_digits": "1", "hashes": None, "minus_digits": "-1", "mixed": "-9", "tags": None,
}


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_inputs_are_graded(name):
    text, want = HOSTILE[name], HOSTILE_WANT[name]
    assert len(text) >= 900_000
    assert extract_answer(text) == want
    out = score_completions([text], ["1"])
    assert out["correct"] == [float(want == "1")] and out["format"] == [0.0]  # nothing here is well formatted
    assert total_reward(text, "1") == out["reward"][0] == float(want == "1")


def test_hostile_values():
    assert extract_answer("7" * 1_000_000) is None  # too long to be an answer
    assert extract_answer("1 " * 500_000) == "1"
    assert extract_answer("#### 1" * 170_000) == "1"
    assert extract_answer("<answer>1" * 110_000) == "1"
    assert extract_answer("1." * 500_000) == "1"


def test_fuzz_never_raises():
    rng = random.Random(0)
    atoms = ["<answer>", "</answer>", "<reasoning>", "</reasoning>", "####", "\\boxed{", "}",
             "$", ",", ".", "-", "+", " ", "\n", "0", "1", "9", "123", "1,000", "e", "é", "٣",
             "\ud800", "\udfff", "\x00", "😀", "{", "}}", "nan", "inf"]
    for _ in range(3000):
        text = "".join(rng.choice(atoms) for _ in range(rng.randint(0, 40)))
        ans = extract_answer(text)
        assert ans is None or normalize_number(ans) == ans  # output is canonical
        assert 0.0 <= format_reward(text) <= 0.1 + 1e-12
        assert 0.0 <= total_reward(text, "1") <= 1.1 + 1e-12
        normalize_number(text)


@pytest.mark.parametrize("text,strict,lenient", [
    ("<reasoning>\n3+4\n</reasoning>\n<answer>\n7\n</answer>", "7", "7"),
    ("<answer>\\boxed{7} or 8</answer>", "7", "7"),
    ("the answer is 7", None, "7"),                          # no block: only the lenient grader finds it
    ("#### 7", None, "7"),
    ("<answer>7</answer> then <answer>8</answer>", None, "8"),  # two blocks: not well-formed
    ("</answer> 7 <answer>", None, "7"),                      # tags out of order
    ("<answer>seven</answer> 7", None, "7"),                  # the block holds no number
    ("<answer>7", None, "7"),                                 # unclosed
])
def test_strict_answer_needs_one_well_formed_block(text, strict, lenient):
    assert strict_answer(text) == strict and extract_answer(text) == lenient
    assert strict_correct(text, 7) == (1.0 if strict == "7" else 0.0)
    assert correctness_reward(text, 7) == (1.0 if lenient == "7" else 0.0)


def test_strict_correct_refuses_a_bad_gold_and_odd_input():
    with pytest.raises(ValueError, match="not a number"):
        strict_correct("<answer>7</answer>", "seven")
    assert strict_answer(None) is None and strict_correct(None, 7) == 0.0

