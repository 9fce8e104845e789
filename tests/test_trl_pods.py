"""PODSGRPOTrainer (minipods.scale.trl_pods) on the tiny model, CPU, against stock TRL GRPOTrainer."""
import types

import pytest

pytest.importorskip("trl")

import torch  # noqa: E402
from datasets import Dataset  # noqa: E402
from transformers import TrainerCallback  # noqa: E402
from trl import GRPOConfig, GRPOTrainer  # noqa: E402

from minipods.downsample import max_variance  # noqa: E402
from minipods.grpo import group_advantages  # noqa: E402
from minipods.scale.trl_pods import PODSGRPOConfig, PODSGRPOTrainer, check_pods_config  # noqa: E402
from minipods.twins.tiny import tiny_policy  # noqa: E402

N = 4  # rollouts per prompt
# Scripted rollouts for 2 prompts x N (rows in generation order); reward = number of "1"s. Every text is unique,
# so a row can be recognised after TRL's shuffle.
TEXTS = ["1", "a11", "b111", "c11111",  # prompt 0: rewards 1 2 3 5
         "x", "y1", "z1", "w"]          # prompt 1: rewards 0 1 1 0
REWARD = {t: float(t.count("1")) for t in TEXTS}


def ones_reward(completions, **kw):
    return [float(c.count("1")) for c in completions]


def char_reward(completions, **kw):  # a dense reward for real (random) generations: always some variance
    return [sum(map(ord, c)) / (100.0 * max(len(c), 1)) for c in completions]


def make_trainer(pods_m=None, steps=1, scripted=True, reward=ones_reward, **kw):
    """A (PODS)GRPOTrainer on the tiny LoRA model: 2 prompts x N rollouts per step, 2 accumulation micro-steps."""
    model, tok = tiny_policy(seed=0)  # same weights and LoRA init for every trainer
    common = dict(output_dir="/tmp/minipods-test-trl", num_generations=N, per_device_train_batch_size=N,
                  gradient_accumulation_steps=2, max_completion_length=6, max_steps=steps, learning_rate=1e-2,
                  use_cpu=True, bf16=False, gradient_checkpointing=False, report_to="none", logging_steps=1,
                  save_strategy="no", disable_tqdm=True, shuffle_dataset=False, dataloader_num_workers=0, seed=0)
    common.update(kw)
    if pods_m is None:
        args, cls = GRPOConfig(**common), GRPOTrainer
    else:
        args, cls = PODSGRPOConfig(pods_m=pods_m, **common), PODSGRPOTrainer
    ds = Dataset.from_list([{"prompt": f"q{i}:"} for i in range(4)])
    tr = cls(model, reward, args=args, train_dataset=ds, processing_class=tok)
    if scripted:
        # Replace only the generation backend: TRL still decodes, scores and normalises as usual.
        def scripted_generate(self, prompt_ids, images, multimodal_fields, num_generations, **_):
            ids = [tok(TEXTS[i % len(TEXTS)], add_special_tokens=False).input_ids + [tok.eos_token_id]
                   for i in range(len(prompt_ids))]
            return ids, None
        tr._generate_single_turn = types.MethodType(scripted_generate, tr)
    # Record what the loss sees (per micro-step) and the gradients right before each optimizer step.
    tr.seen, tr.grads = [], []
    inner = tr.compute_loss

    def spy(model, inputs, **kwargs):
        loss = inner(model, inputs, **kwargs)
        tr.seen.append({**inputs, "loss": loss.detach().clone()})
        return loss
    tr.compute_loss = spy

    class Grads(TrainerCallback):
        def on_pre_optimizer_step(self, args, state, control, **k):
            tr.grads.append({n: p.grad.clone() for n, p in tr.model.named_parameters() if p.grad is not None})
    tr.add_callback(Grads())
    return tr, tok


def texts_of(tok, inputs):
    ids, mask = inputs["completion_ids"], inputs["completion_mask"]
    return [tok.decode(i[m.bool()], skip_special_tokens=True) for i, m in zip(ids, mask)]


def test_pods_m_equal_n_matches_stock_grpo():
    stock, _ = make_trainer(pods_m=None)
    stock.train()
    pods, _ = make_trainer(pods_m=N)
    pods.train()
    assert len(stock.seen) == len(pods.seen) == 2  # 2 accumulation micro-steps, same rows (same shuffle)
    for a, b in zip(stock.seen, pods.seen):
        assert torch.equal(a["completion_ids"], b["completion_ids"])
        torch.testing.assert_close(a["advantages"], b["advantages"], rtol=0, atol=1e-6)
        assert int(a["num_items_in_batch"]) == int(b["num_items_in_batch"])
        torch.testing.assert_close(a["loss"], b["loss"], rtol=1e-6, atol=1e-7)
    assert float(stock.seen[0]["loss"].abs()) + float(stock.seen[1]["loss"].abs()) > 0  # not a trivial 0 == 0
    (gs,), (gp,) = stock.grads, pods.grads
    assert gs.keys() == gp.keys() and any(g.abs().sum() > 0 for g in gs.values())
    for k in gs:
        torch.testing.assert_close(gs[k], gp[k], rtol=1e-5, atol=1e-7)


def test_update_sees_exactly_the_max_variance_rows_with_kept_advantages():
    m = 2
    tr, tok = make_trainer(pods_m=m)
    tr.train()
    rows = [(t, float(a)) for s in tr.seen for t, a in zip(texts_of(tok, s), s["advantages"])]
    assert [len(s["advantages"]) for s in tr.seen] == [2, 2]  # P x m = 2 x 2 rows, split over 2 micro-steps
    # Expected: per prompt, the rows max_variance picks, with advantages normalised within the kept m
    # (minipods.grpo.group_advantages: unbiased std, eps 1e-4 -- the same formula as TRL's scale_rewards="group").
    kept = [g * N + i for g in range(2) for i in max_variance([REWARD[t] for t in TEXTS[g * N:(g + 1) * N]], m)]
    want_adv = group_advantages(torch.tensor([REWARD[TEXTS[j]] for j in kept]), torch.tensor([j // N for j in kept]))
    want = {TEXTS[j]: float(a) for j, a in zip(kept, want_adv)}
    assert sorted(t for t, _ in rows) == sorted(want) == sorted(["1", "c11111", "x", "z1"])
    for t, a in rows:
        assert a == pytest.approx(want[t], abs=1e-5)
    # two kept rollouts: +-1/sqrt(2) (normalised over all n, "1" would get -1.02 and "c11111" +1.33)
    assert sorted(a for _, a in rows) == pytest.approx([-0.7071, -0.7071, 0.7071, 0.7071], abs=1e-3)
    # The token count the dapo loss divides by is that of the kept rows only.
    kept_tokens = sum(int(s["completion_mask"].sum()) for s in tr.seen)
    assert all(int(s["num_items_in_batch"]) == kept_tokens for s in tr.seen)
    # TRL's completions table: advantages of the kept rows, NaN for the dropped ones (generation order)
    logged = list(tr._logs["advantages"])
    assert [a != a for a in logged] == [j not in kept for j in range(len(TEXTS))]
    log = tr.state.log_history[0]
    assert log["pods/kept_reward"] == pytest.approx((1 + 5 + 0 + 1) / 4)
    assert log["reward"] == pytest.approx((1 + 2 + 3 + 5 + 0 + 1 + 1 + 0) / 8)  # TRL's own metric: all n
    assert log["pods/frac_reward_zero_std_before"] == 0.0 and log["pods/frac_reward_zero_std_after"] == 0.0


def test_pods_rule_max_reward_and_the_all_equal_metric():
    tr, tok = make_trainer(pods_m=2, pods_rule="max_reward")
    tr.train()
    assert sorted(t for s in tr.seen for t in texts_of(tok, s)) == sorted(["b111", "c11111", "y1", "z1"])
    # prompt 1 keeps its two 1-rewards: no signal left there (advantages 0), which the "after" metric shows
    adv = {t: float(a) for s in tr.seen for t, a in zip(texts_of(tok, s), s["advantages"])}
    assert adv["y1"] == adv["z1"] == 0.0
    log = tr.state.log_history[0]
    assert log["pods/frac_reward_zero_std_before"] == 0.0 and log["pods/frac_reward_zero_std_after"] == 0.5


def test_short_training_run_changes_the_adapter():
    tr, _ = make_trainer(pods_m=2, steps=2, scripted=False, reward=char_reward)
    before = {n: p.detach().clone() for n, p in tr.model.named_parameters() if "lora_" in n}
    tr.train()
    assert tr.state.global_step == 2 and len(tr.seen) == 4
    assert all(len(s["advantages"]) == 2 for s in tr.seen)
    after = dict(tr.model.named_parameters())
    changed = [n for n in before if not torch.equal(before[n], after[n].detach())]
    assert any("lora_B" in n for n in changed)
    assert all(torch.isfinite(after[n]).all() for n in before)
    assert "pods/kept_reward_std" in tr.state.log_history[0]


def _args(**kw):
    a = dict(num_generations=8, pods_m=4, pods_rule="max_variance", steps_per_generation=1, generation_batch_size=16)
    return types.SimpleNamespace(**{**a, **kw})


@pytest.mark.parametrize("kw, procs, msg", [
    (dict(pods_m=9), 1, "pods_m must be an integer in [2, num_generations=8]"),
    (dict(pods_m=1), 1, "pods_m must be an integer in [2"),
    (dict(pods_m=4.0), 1, "pods_m must be an integer"),
    (dict(pods_rule="best"), 1, "pods_rule must be one of max_variance, max_reward, random"),
    (dict(generation_batch_size=8), 2, "each process must hold whole prompt groups"),  # 4 rows/process < 8
    (dict(pods_m=3, generation_batch_size=8, steps_per_generation=2), 1, "the 3 kept rows per process"),
])
def test_unworkable_settings_fail_with_one_line(kw, procs, msg):
    with pytest.raises(ValueError, match=msg.replace("[", r"\[")) as e:
        check_pods_config(_args(**kw), procs)
    assert "\n" not in str(e.value)
    check_pods_config(_args(), 2)  # 16 rows over 2 processes = one whole group each: fine


def test_config_and_trainer_reject_at_construction():
    with pytest.raises(ValueError, match="pods_m must be"):
        PODSGRPOConfig(output_dir="/tmp/minipods-test-trl", num_generations=4, per_device_train_batch_size=4,
                       pods_m=5, use_cpu=True, bf16=False, report_to="none")
    model, tok = tiny_policy()
    with pytest.raises(ValueError, match="needs args=PODSGRPOConfig"):
        PODSGRPOTrainer(model, ones_reward, args=GRPOConfig(output_dir="/tmp/minipods-test-trl", use_cpu=True,
                                                            bf16=False, report_to="none", num_generations=4,
                                                            per_device_train_batch_size=4))


def test_steps_per_generation_beyond_accumulation_keeps_the_same_rows():
    # One generation (2 prompts x 4) feeds 4 micro-steps = 2 optimizer steps of 2 accumulation steps each; TRL then
    # also needs the old log-probs (the policy moves between them): they must be down-sampled with the rows.
    tr, tok = make_trainer(pods_m=2, steps=2, per_device_train_batch_size=2, steps_per_generation=4)
    tr.train()
    assert [len(s["advantages"]) for s in tr.seen] == [1, 1, 1, 1]  # 2 x 4 x 2 / 4 kept rows, one per micro-step
    assert sorted(t for s in tr.seen for t in texts_of(tok, s)) == sorted(["1", "c11111", "x", "z1"])
    assert all(s["old_per_token_logps"].shape == s["completion_ids"].shape for s in tr.seen)
    assert len(tr.grads) == 2


def test_cli_bad_setting_exits_2_with_one_line(tmp_path, capsys):
    from minipods.scale.trl_pods import main
    assert main(["--num_generations", "4", "--pods_m", "5", "--output_dir", str(tmp_path), "--use_cpu"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1] == "minipods.trl_pods: error: pods_m must be an integer in [2, num_generations=4], got 5"
    with pytest.raises(SystemExit) as e:  # a bad value: argparse, same one-line style
        main(["--pods_m", "two"])
    assert e.value.code == 2
    assert capsys.readouterr().err.strip() == "minipods.trl_pods: error: argument --pods_m/--pods-m: invalid int value: 'two'"


def test_cli_trains_and_saves_an_adapter(tmp_path, capsys):
    from minipods.scale.trl_pods import main
    model, tok = tiny_policy(lora=False)
    model.save_pretrained(tmp_path / "tiny")
    tok.save_pretrained(tmp_path / "tiny")
    out = tmp_path / "run"
    rc = main(["--model", str(tmp_path / "tiny"), "--data", "synthetic", "--lora_r", "4", "--lora_alpha", "8",
               "--num_generations", "4", "--pods_m", "2", "--per_device_train_batch_size", "4",
               "--max_completion_length", "4", "--max_steps", "1", "--output_dir", str(out), "--use_cpu",
               "--bf16", "false", "--gradient_checkpointing", "false", "--report_to", "none",
               "--save_strategy", "no", "--disable_tqdm", "true"])
    assert capsys.readouterr().err.count("SYNTHETIC") == 1  # minipods says once that this is not GSM8K
    assert rc == 0 and (out / "adapter" / "adapter_model.safetensors").is_file()


def test_kept_advantages_follow_trl_conventions():
    from minipods.scale.trl_pods import kept_advantages
    r = torch.tensor([[1.0], [5.0], [0.0], [1.0], [2.0], [float("nan")]])  # 3 prompts x m=2, one reward function
    w = torch.ones(1)
    got = kept_advantages(r, w, 2, "group", "sum_then_normalize")
    want = group_advantages(r[:4, 0], torch.tensor([0, 0, 1, 1]))
    torch.testing.assert_close(got[:4], want)
    assert got[4:].tolist() == [0.0, 0.0]  # a group with an unscorable row: nothing to compare with, no signal
    torch.testing.assert_close(kept_advantages(r, w, 2, "none", "sum_then_normalize")[:4],
                               torch.tensor([-2.0, 2.0, -0.5, 0.5]))
    batch = kept_advantages(r, w, 2, "batch", "sum_then_normalize")  # one std over all scored kept rewards
    std = torch.tensor([1.0, 5.0, 0.0, 1.0, 2.0]).std()
    torch.testing.assert_close(batch[:2], torch.tensor([-2.0, 2.0]) / (std + 1e-4))
