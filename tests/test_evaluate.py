"""minipods.evaluate: evaluate_items on the tiny model, the aggregation, and the CLI."""

import json

import pytest
import torch

from minipods import evaluate as ev
from minipods.data import synthetic_problems
from minipods.twins.tiny import tiny_policy

ITEMS = synthetic_problems(3, seed=1)


@pytest.fixture(scope="module")
def tiny():
    return tiny_policy(seed=0, lora=False)


def test_evaluate_items_rows_are_consistent(tiny):
    model, tok = tiny
    res = ev.evaluate_items(model, tok, ITEMS, max_new_tokens=5, batch_size=2)
    assert res["n"] == 3 and res["samples"] == 1 and len(res["rows"]) == 3
    assert [r["question"] for r in res["rows"]] == [it["question"] for it in ITEMS]
    assert [r["gold"] for r in res["rows"]] == [it["gold"] for it in ITEMS]
    assert all(len(r["completions"]) == len(r["extracted"]) == 1 for r in res["rows"])
    assert res["accuracy"] == pytest.approx(sum(r["correct"] for r in res["rows"]) / 3)
    lo, hi = res["ci95"]
    assert lo <= res["accuracy"] <= hi and 0 <= res["format_rate"] <= 1
    again = ev.evaluate_items(model, tok, ITEMS, max_new_tokens=5, batch_size=3)  # greedy: deterministic
    assert [r["completions"] for r in again["rows"]] == [r["completions"] for r in res["rows"]]
    torch.manual_seed(0)
    res = ev.evaluate_items(model, tok, ITEMS, max_new_tokens=5, batch_size=4, samples=2, temperature=0.9)
    assert res["samples"] == 2 and all(len(r["completions"]) == 2 for r in res["rows"])
    assert res["accuracy"] == pytest.approx(sum(r["correct"] for r in res["rows"]) / 3)
    with pytest.raises(ValueError, match="greedy"):
        ev.evaluate_items(model, tok, ITEMS, samples=2)


def test_evaluation_shows_one_bar_of_its_questions(tiny, capsys):
    """Several generate calls (batch_size 2 for 5 questions: 3 calls) show as one bar over the questions."""
    model, tok = tiny
    items = synthetic_problems(5, seed=2)
    ev.evaluate_items(model, tok, items, max_new_tokens=3, batch_size=2, progress=True)
    err = capsys.readouterr().err
    assert err.count("evaluating 5 held-out questions:   0%") == 1 and "rollouts" not in err  # one bar, from 0/5
    ev.evaluate_items(model, tok, items, max_new_tokens=3, batch_size=2)
    assert capsys.readouterr().err == ""  # no bar unless asked


def test_evaluate_items_known_answer(tiny, monkeypatch):
    """Completions fixed by hand: q0 right in 1 of 2 samples, q1 right in both, q2 never; 1 well-formatted."""
    model, tok = tiny
    good = "<reasoning>\nok\n</reasoning>\n<answer>\n{}\n</answer>"
    texts = [good.format(ITEMS[0]["gold"]), "no idea", f"it is {ITEMS[1]['gold']}", f"#### {ITEMS[1]['gold']}",
             "<answer>-99999</answer>", ""]

    class FakeRollouts:
        seconds, num_tokens = 1.0, 10

    def fake_generate(model, tokenizer, prompts, n, **kw):
        assert len(prompts) == 3 and n == 2
        r = FakeRollouts()
        r.texts = texts
        return r

    monkeypatch.setattr(ev, "fast_generate_rollouts", fake_generate)
    res = ev.evaluate_items(model, tok, ITEMS, samples=2, temperature=0.9)
    assert [r["correct"] for r in res["rows"]] == [0.5, 1.0, 0.0]
    assert res["accuracy"] == pytest.approx(0.5)
    assert res["format_rate"] == pytest.approx(1 / 6)
    assert res["rows"][1]["extracted"] == [ITEMS[1]["gold"]] * 2 and res["rows"][2]["extracted"] == ["-99999", None]
    # Wilson at p = 0.5, n = 3: 0.5 -+ 1.96 sqrt(0.25 / 3 + 1.96^2 / 36) / (1 + 1.96^2 / 3)
    assert res["ci95"] == pytest.approx((0.12533, 0.87467), abs=1e-5)
    # strict: only q0's first sample has its answer in a well-formed block (q2's block is wrong)
    assert [r["strict"] for r in res["rows"]] == [0.5, 0.0, 0.0]
    assert res["strict_accuracy"] == pytest.approx(0.5 / 3)
    assert res["strict_ci95"] == pytest.approx((0.01765, 0.69002), abs=1e-5)  # Wilson at p = 1/6, n = 3


def test_evaluate_to_file_writes_both_gradings(tiny, tmp_path, monkeypatch):
    model, tok = tiny
    texts = [f"<answer>{ITEMS[0]['gold']}</answer>", f"so {ITEMS[1]['gold']}", "<answer>-99999</answer>"]

    class FakeRollouts:
        seconds, num_tokens = 2.0, 10

    def fake_generate(model, tokenizer, prompts, n, **kw):
        r = FakeRollouts()
        r.texts = texts
        return r

    monkeypatch.setattr(ev, "fast_generate_rollouts", fake_generate)
    row = ev.evaluate_to_file(model, tok, ITEMS, tmp_path / "eval" / "step_00003.jsonl")
    assert row == {"eval_accuracy": pytest.approx(2 / 3), "eval_strict_accuracy": pytest.approx(1 / 3),
                   "eval_format_rate": 0.0, "eval_s": 2.0, "eval_n": 3}
    rows = [json.loads(x) for x in (tmp_path / "eval" / "step_00003.jsonl").read_text().splitlines()]
    assert [(r["index"], r["correct"], r["strict"]) for r in rows] == [(0, 1, 1), (1, 1, 0), (2, 0, 0)]
    assert [r["pred"] for r in rows] == [ITEMS[0]["gold"], ITEMS[1]["gold"], "-99999"]


def test_cli_with_saved_model_and_adapter(tmp_path, capsys):
    base, tok = tiny_policy(seed=0, lora=False)
    base.save_pretrained(tmp_path / "base")
    tok.save_pretrained(tmp_path / "base")
    policy, _ = tiny_policy(seed=0)
    run = tmp_path / "run"
    policy.save_pretrained(run / "adapter")
    (run / "config.json").write_text(json.dumps({"method": "pods", "model": str(tmp_path / "base")}))
    out = tmp_path / "eval.jsonl"
    common = ["--data", "synthetic", "--limit", "3", "--max-new-tokens", "4", "--no-progress", "--device", "cpu"]
    # a run folder as --adapter: its adapter/ and, without --model, the run's model
    assert ev.main(["--adapter", str(run), "--output", str(out)] + common) == 0
    text = capsys.readouterr().out
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(rows) == 3 and [r["index"] for r in rows] == [0, 1, 2]
    assert set(rows[0]) >= {"question", "gold", "completions", "extracted", "correct"}
    acc = sum(r["correct"] for r in rows) / 3
    assert f"accuracy: {acc:.4f}" in text and "95% CI" in text and "format rate:" in text
    assert f"model: {tmp_path / 'base'} (quantize none, dtype auto) + adapter {run / 'adapter'}" in text
    # the bare model, sampled (the paper's protocol: T=0.9 by default with --samples > 1)
    assert ev.main(["--model", str(tmp_path / "base"), "--samples", "2", "--output", str(out)] + common) == 0
    text = capsys.readouterr().out
    assert "T=0.9, 2 sample(s)" in text
    assert all(len(json.loads(line)["completions"]) == 2 for line in out.read_text().splitlines())


def test_adapter_is_evaluated_on_the_base_its_run_trained(tmp_path, monkeypatch, capsys):
    """--adapter RUN takes the model, quantize and dtype from the run's config.json (a QLoRA adapter on a
    16-bit base scores differently), each unless given on the command line; the output names the base."""
    policy, tok = tiny_policy(seed=0)
    run = tmp_path / "run"
    policy.save_pretrained(run / "adapter")
    (run / "config.json").write_text(json.dumps({"method": "pods", "model": "some/base", "quantize": "4bit",
                                                 "dtype": "float16", "device": "cuda:0"}))
    loaded = []
    monkeypatch.setattr(ev, "resolve_model", lambda name: name)
    monkeypatch.setattr(ev, "load_policy", lambda name, **kw: loaded.append((name, kw)) or (policy, tok))
    common = ["--adapter", str(run), "--data", "synthetic", "--limit", "1", "--max-new-tokens", "2", "--no-progress",
              "--output", ""]
    assert ev.main(common) == 0
    assert [(n, kw["quantize"], kw["dtype"], kw["device"]) for n, kw in loaded] == [("some/base", "4bit", "float16", "auto")]
    assert "model: some/base (quantize 4bit, dtype float16) + adapter" in capsys.readouterr().out
    assert ev.main(common + ["--quantize", "none", "--dtype", "float32", "--model", "other/base"]) == 0
    assert loaded[1][0] == "other/base" and (loaded[1][1]["quantize"], loaded[1][1]["dtype"]) == ("none", "float32")
    assert "model: other/base (quantize none, dtype float32)" in capsys.readouterr().out


def _adapter(folder):
    from safetensors.torch import save_file

    folder.mkdir(parents=True)
    (folder / "adapter_config.json").write_text("{}")
    save_file({"w": torch.zeros(1)}, str(folder / "adapter_model.safetensors"))
    return folder


def test_resolve_adapter_fallbacks(tmp_path):
    run_cfg = {"method": "pods", "model": "some/base"}
    # 1. an adapter folder itself, nothing around it: no run config
    bare = _adapter(tmp_path / "bare")
    assert ev.resolve_adapter(str(bare)) == (bare, None)
    # 2. a run folder: its adapter/, and its config.json (which names the base model)
    run = tmp_path / "run"
    _adapter(run / "checkpoint" / "adapter")
    (run / "config.json").write_text(json.dumps(run_cfg))
    assert ev.resolve_adapter(str(run)) == (run / "checkpoint" / "adapter", run_cfg)  # 3. only a checkpoint yet
    _adapter(run / "adapter")
    assert ev.resolve_adapter(str(run)) == (run / "adapter", run_cfg)  # the final adapter wins over the checkpoint's
    assert ev.resolve_adapter(str(run / "adapter")) == (run / "adapter", run_cfg)  # the run's config from above
    assert ev.resolve_adapter(str(run / "checkpoint" / "adapter")) == (run / "checkpoint" / "adapter", run_cfg)
    # 4. a config.json that is not a run's (no "method") or not JSON at all: no run config
    other = _adapter(tmp_path / "other" / "adapter").parent
    (other / "config.json").write_text(json.dumps({"model_type": "llama"}))
    assert ev.resolve_adapter(str(other)) == (other / "adapter", None)
    (other / "config.json").write_text("{not json")
    assert ev.resolve_adapter(str(other)) == (other / "adapter", None)
    # 5. nothing there: a one-line error naming the three places looked at
    with pytest.raises(ValueError, match=r"no adapter_config.json there \(nor in adapter/ or checkpoint/adapter/\)"):
        ev.resolve_adapter(str(tmp_path / "empty"))
