import json
import os
import re
import warnings

import pytest

from minipods.data import (DataNotFoundError, ENV_DIR, SYSTEM_PROMPT, build_prompt, load_gsm8k, load_task,
                           synthetic_problems)
from minipods.twins.tiny import tiny_tokenizer

GSM8K_DIR = os.environ.get(ENV_DIR)
needs_gsm8k = pytest.mark.skipif(not GSM8K_DIR, reason=f"{ENV_DIR} not set")


@needs_gsm8k
def test_official_files_load_with_normalised_gold():
    train, test = load_gsm8k("train"), load_gsm8k("test")
    assert (len(train), len(test)) == (7473, 1319)
    assert train[0]["gold"] == "72" and train[0]["question"].startswith("Natalia sold clips")
    assert all(re.fullmatch(r"-?\d+(\.\d+)?", it["gold"]) for it in train + test)
    # a reference answer written with a thousands separator is normalised
    with_comma = [it for it in train if re.search(r"####\s*-?\d{1,3}(,\d{3})+\s*$", it["answer"])]
    assert with_comma, "GSM8K has answers like '#### 1,080'"
    raw = with_comma[0]["answer"].rsplit("####", 1)[1].strip()
    assert with_comma[0]["gold"] == raw.replace(",", "")
    assert load_gsm8k("test", limit=5) == test[:5]


def _write(tmp_path, lines, split="train"):
    (tmp_path / f"{split}.jsonl").write_text("\n".join(lines) + "\n")
    return tmp_path


def test_data_dir_argument_wins_over_env(tmp_path, monkeypatch):
    d = _write(tmp_path, [json.dumps({"question": "q?", "answer": "r\n#### -1,080"})])
    monkeypatch.setenv(ENV_DIR, "/nonexistent")
    assert load_gsm8k("train", data_dir=d) == [{"question": "q?", "answer": "r\n#### -1,080", "gold": "-1080"}]


@pytest.mark.parametrize("line, msg", [
    ("{not json", "invalid JSON"),
    (json.dumps({"question": "q"}), "missing key 'answer'"),
    (json.dumps({"question": "q", "answer": "no marker 5"}), "no '####'"),
    (json.dumps({"question": "q", "answer": "x #### seven"}), "not a number"),
    (json.dumps(["a", "list"]), "expected a JSON object"),
])
def test_bad_lines_name_file_and_line(tmp_path, line, msg):
    good = json.dumps({"question": "q", "answer": "#### 1"})
    d = _write(tmp_path, [good, good, line])
    with pytest.raises(ValueError) as e:
        load_gsm8k("train", data_dir=d)
    assert "train.jsonl:3" in str(e.value) and msg in str(e.value)


@pytest.fixture
def no_gsm8k(tmp_path, monkeypatch):
    """No local files, no network, empty hub caches: GSM8K cannot be found."""
    monkeypatch.delenv(ENV_DIR, raising=False)
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path / "empty_cache"))
    monkeypatch.setenv("HF_HOME", str(tmp_path / "empty_home"))


def test_missing_data_names_all_three_ways(tmp_path, no_gsm8k):
    with pytest.raises(DataNotFoundError) as e:
        load_gsm8k("test")
    msg = str(e.value)
    assert "data_dir" in msg and ENV_DIR in msg and "openai/gsm8k" in msg
    with pytest.raises(DataNotFoundError, match="not found"):
        load_gsm8k("test", data_dir=tmp_path)  # folder without test.jsonl


def test_bad_split_and_limit():
    with pytest.raises(ValueError, match="split"):
        load_gsm8k("validation", data_dir=".")
    with pytest.raises(ValueError, match="limit"):
        load_gsm8k("train", data_dir=".", limit=-1)


def test_synthetic_problems_are_seeded_and_correct():
    a, b = synthetic_problems(200, seed=3), synthetic_problems(200, seed=3)
    assert a == b and a != synthetic_problems(200, seed=4)
    for it in a:
        assert it["answer"].rsplit("####", 1)[1].strip() == it["gold"]
        # every step line "x op y = z" in the worked answer is arithmetically right
        for lhs, rhs in re.findall(r"^(\d+ [-+*/] \d+) = (\d+)$", it["answer"], flags=re.M):
            assert eval(lhs.replace("/", "//")) == int(rhs)
        assert int(it["gold"]) >= 0
    assert len({it["question"] for it in a}) > 150


@pytest.mark.parametrize("level, ops, max_gold", [(0, {"+", "-"}, 18), (1, {"+", "-", "*", "/"}, 144),
                                                  (2, {"+", "-", "*"}, 121)])
def test_synthetic_levels(level, ops, max_gold):
    items = synthetic_problems(300, seed=5, level=level)
    assert items == synthetic_problems(300, seed=5, level=level)
    seen = set()
    for it in items:
        lines = it["answer"].split("\n")[:-1]
        assert len(lines) == (2 if level == 2 else 1)  # the number of arithmetic steps
        for line in lines:
            lhs, rhs = line.split(" = ")
            assert eval(lhs.replace("/", "//")) == int(rhs)
            seen.add(lhs.split()[1])
        assert int(lines[-1].split(" = ")[1]) == int(it["gold"]) and 0 <= int(it["gold"]) <= max_gold
        if level == 0:  # single digits: a + b with a, b <= 9, or (a + b) - b
            a, op, b = lines[0].split(" = ")[0].split()
            assert int(b) <= 9 and int(a) <= (9 if op == "+" else 18)
    assert seen == ops
    assert synthetic_problems(5, seed=5) == synthetic_problems(5, seed=5, level=1)  # the default is level 1
    with pytest.raises(ValueError, match="level"):
        synthetic_problems(3, level=7)


@pytest.mark.parametrize("level", [0, 1, 2])
def test_synthetic_test_split_never_repeats_a_train_question(level):
    train = {it["question"] for it in load_task("synthetic", "train", seed=3, level=level, notice=False)[0]}
    test = load_task("synthetic", "test", limit=500, seed=3, level=level, notice=False)[0]
    assert len(test) == 500 and not {it["question"] for it in test} & train


def test_load_task_falls_back_loudly(no_gsm8k, capsys):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a notice, not a Python warning with file:line
        items, src = load_task("gsm8k", "train", limit=10)
    err = capsys.readouterr().err
    assert src.startswith("synthetic") and len(items) == 10
    # one line, saying why and how to get GSM8K (here the user can act on it)
    assert err.count("\n") == 1 and "SYNTHETIC" in err and "GSM8K not found" in err and ENV_DIR in err
    load_task("synthetic", "train", limit=3)
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--data synthetic" in err and ENV_DIR not in err  # chosen: nothing to set
    load_task("synthetic", "test", limit=3, notice=False)
    assert capsys.readouterr().err == ""
    with pytest.raises(DataNotFoundError):
        load_task("gsm8k", "train", fallback=False)
    with pytest.raises(ValueError, match="unknown task"):
        load_task("mnist")
    train, test = load_task("synthetic", "train", limit=50)[0], load_task("synthetic", "test", limit=50)[0]
    assert train != test


def test_build_prompt_chat_template_and_fallback():
    tok = tiny_tokenizer()
    p = build_prompt(tok, "What is 2+2?")
    assert p == f"[system]\n{SYSTEM_PROMPT}\n[user]\nWhat is 2+2?\n[assistant]\n"
    tok.chat_template = None
    p = build_prompt(tok, "What is 2+2?", system_prompt="Be brief.")
    assert p == "Be brief.\n\nQuestion: What is 2+2?\nAnswer:\n"
    assert "<answer>" in SYSTEM_PROMPT and "<reasoning>" in SYSTEM_PROMPT
