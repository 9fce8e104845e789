"""PODSGRPOTrainer (minipods.scale.trl_pods) on the tiny model, CPU, against stock TRL GRPOTrainer; and its
command line, scripts/trl_pods.py."""
import collections
import os
import subprocess
import sys
import types
from pathlib import Path

import numpy as np
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

from conftest import load_script  # noqa: E402

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


def make_trainer(pods_m=None, steps=1, scripted=True, reward=ones_reward, texts=TEXTS, truncated=(), **kw):
    """A (PODS)GRPOTrainer on the tiny LoRA model: 2 prompts x N rollouts per step, 2 accumulation micro-steps.

    Scripted rollouts: row i of a generation batch is texts[i]; a text in `truncated` gets no EOS (TRL then sees
    a truncated completion). tr.seen: what each micro-step's loss saw; tr.logps: the log-probs that loss computed;
    tr.grads: the gradients right before each optimizer step.
    """
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
            ids = [tok(texts[i % len(texts)], add_special_tokens=False).input_ids
                   + ([] if texts[i % len(texts)] in truncated else [tok.eos_token_id]) for i in range(len(prompt_ids))]
            return ids, None
        tr._generate_single_turn = types.MethodType(scripted_generate, tr)
    tr.seen, tr.logps, tr.grads = [], [], []
    inner, inner_logps = tr.compute_loss, tr._get_per_token_logps_and_entropies

    def spy(model, inputs, **kwargs):
        loss = inner(model, inputs, **kwargs)
        tr.seen.append({**inputs, "loss": loss.detach().clone()})
        return loss
    tr.compute_loss = spy

    def spy_logps(*a, **k):  # the loss's own forward is the one that asks for entropies
        out = inner_logps(*a, **k)
        if k.get("compute_entropy"):
            tr.logps.append(out[0].detach().clone())
        return out
    tr._get_per_token_logps_and_entropies = spy_logps

    class Grads(TrainerCallback):
        def on_pre_optimizer_step(self, args, state, control, **k):
            tr.grads.append({n: p.grad.clone() for n, p in tr.model.named_parameters() if p.grad is not None})
    tr.add_callback(Grads())
    return tr, tok


def texts_of_ids(tok, inputs):  # every row's text, also one whose completion_mask is all zero (masked)
    return [tok.decode(i, skip_special_tokens=True) for i in inputs["completion_ids"]]


def texts_of(tok, inputs):
    ids, mask = inputs["completion_ids"], inputs["completion_mask"]
    return [tok.decode(i[m.bool()], skip_special_tokens=True) for i, m in zip(ids, mask)]


@pytest.mark.parametrize("kw", [dict(), dict(reward=[ones_reward, char_reward], reward_weights=[1.0, 2.0],
                                           multi_objective_aggregation="normalize_then_sum")])
def test_pods_m_equal_n_matches_stock_grpo(kw):
    stock, _ = make_trainer(pods_m=None, **kw)
    stock.train()
    pods, _ = make_trainer(pods_m=N, **kw)
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


@pytest.mark.parametrize("kw", [dict(), dict(beta=0.1, steps=2, per_device_train_batch_size=2, steps_per_generation=4)])
def test_pods_equals_stock_grpo_fed_only_the_kept_rows(kw):
    # The same rollouts twice: PODS keeps m=2 of n=4 per prompt; stock GRPOTrainer with num_generations=2 is given
    # only those kept rollouts (so its advantages are computed within the kept pair). Same losses, token counts and
    # gradients. The second case adds old log-probs (2 optimizer steps per generation) and reference log-probs.
    pods, tok = make_trainer(pods_m=2, **kw)
    pods.train()
    per_dev = kw.get("per_device_train_batch_size", N) // 2  # stock batch sizes count its 2 rollouts per prompt
    stock, _ = make_trainer(pods_m=None, texts=["1", "c11111", "x", "z1"], **{**kw, "num_generations": 2,
                                                                             "per_device_train_batch_size": per_dev})
    stock.train()
    assert len(pods.seen) == len(stock.seen) in (2, 4) and len(pods.grads) == len(stock.grads) == kw.get("steps", 1)
    for a, b in zip(stock.seen, pods.seen):  # TRL shuffles 4 rows in both, with the same seed: same micro-batches
        assert texts_of(tok, a) == texts_of(tok, b)
        torch.testing.assert_close(a["advantages"], b["advantages"], rtol=0, atol=1e-6)
        assert int(a["num_items_in_batch"]) == int(b["num_items_in_batch"])
        torch.testing.assert_close(a["loss"], b["loss"], rtol=1e-5, atol=1e-7)
    assert all(float(a["loss"].abs()) > 0 for a in stock.seen)
    for gs, gp in zip(stock.grads, pods.grads):
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


def test_kept_rows_keep_their_own_old_and_reference_logps():
    # steps_per_generation 4 > accumulation 2: one generation feeds 2 optimizer steps, so TRL computes the old
    # log-probs of all n rows at generation time; beta > 0 adds the reference log-probs. A kept row must carry its
    # own: until the first optimizer step the policy has not moved, so the loss's importance ratio is 1 on every
    # token (bit-exact here), and the reference log-probs are those of the model with the adapter disabled.
    tr, tok = make_trainer(pods_m=2, steps=2, per_device_train_batch_size=2, steps_per_generation=4, beta=0.1)
    tr.train()
    assert len(tr.seen) == len(tr.logps) == 4 and len(tr.grads) == 2
    assert sorted(t for s in tr.seen for t in texts_of(tok, s)) == sorted(["1", "c11111", "x", "z1"])
    for i, (s, logps) in enumerate(zip(tr.seen, tr.logps)):
        mask = s["completion_mask"].bool()
        ratio = torch.exp(logps - s["old_per_token_logps"])[mask]
        if i < 2:  # micro-steps before the first optimizer step
            torch.testing.assert_close(ratio, torch.ones_like(ratio), rtol=0, atol=1e-6)
        else:  # the policy moved: the old log-probs are still the generation-time ones
            assert (ratio - 1).abs().max() > 1e-3
        ids = torch.cat([s["prompt_ids"], s["completion_ids"]], 1)
        att = torch.cat([s["prompt_mask"], s["completion_mask"]], 1)
        with torch.no_grad(), tr.model.disable_adapter():
            ref = tr._get_per_token_logps_and_entropies(tr.model, ids, att, s["completion_ids"].shape[1])[0]
        torch.testing.assert_close(s["ref_per_token_logps"][mask], ref[mask], rtol=0, atol=1e-6)


def test_every_per_row_tensor_is_sliced_to_the_kept_rows_of_this_process():
    # _pods_downsample on a hand-made generation batch, as process 1 of 2: rewards cover the global 16 rows (4
    # prompts x N), this process holds rows 8..15. Every per-row entry TRL may produce must come back as the
    # pre-selection tensor indexed by this process's kept rows; an unsliced or misaligned one fails.
    tr, _ = make_trainer(pods_m=2)
    g = torch.Generator().manual_seed(0)
    B, C = 2 * N, 5
    rewards = torch.tensor([3, 0, 1, 2, 5, 5, 0, 1, 1, 6, 2, 2, 1, 3, 0, 4], dtype=torch.float32)[:, None]
    out = {"prompt_ids": torch.randint(0, 50, (B, 3), generator=g), "prompt_mask": torch.ones(B, 3, dtype=torch.long),
           "completion_ids": torch.randint(0, 50, (B, C), generator=g),
           "completion_mask": (torch.rand(B, C, generator=g) > 0.2).long(),
           "advantages": torch.randn(B, generator=g), "num_items_in_batch": torch.tensor(999),
           "tool_mask": (torch.rand(B, C, generator=g) > 0.3).long(),
           **{k: torch.randn(B, C, generator=g) for k in ("old_per_token_logps", "ref_per_token_logps",
                                                         "sampling_per_token_logps", "importance_sampling_ratio")}}
    tr.accelerator = types.SimpleNamespace(  # 2 processes; the other holds the same mask sums
        process_index=1, gather=lambda t: torch.stack([t, t]) if t.ndim == 0 else torch.cat([t, t]))
    tr._logs["advantages"] = collections.deque([0.0] * 16, maxlen=16)  # TRL's table: all 16 advantages
    new = tr._pods_downsample(out, rewards)
    kept = [q * N + i for q in range(4) for i in max_variance(rewards[q * N:(q + 1) * N, 0].tolist(), 2)]
    local = torch.tensor([j - B for j in kept if j >= B])
    assert local.tolist() == [0, 1, 6, 7]  # prompt 2 keeps its 1 and 6, prompt 3 its 0 and 4
    assert set(new) == set(out)
    for k, v in out.items():
        if k not in ("advantages", "num_items_in_batch"):
            assert torch.equal(new[k], v[local]), k
    torch.testing.assert_close(new["advantages"], group_advantages(rewards[8 + local, 0], local // N))
    assert int(new["num_items_in_batch"]) == 2 * int((out["completion_mask"] * out["tool_mask"])[local].sum())


# Prompt 0: rewards 0 1 2 3 with the 0 truncated; prompt 1: rewards 0 0 0 2 with the three 0s truncated.
TRUNC_TEXTS, TRUNCATED = ["0", "a1", "b11", "c111", "u", "v", "w", "y11"], ("0", "u", "v", "w")


def test_truncated_rows_are_not_candidates_when_masked():
    tr, tok = make_trainer(pods_m=2, texts=TRUNC_TEXTS, truncated=TRUNCATED, mask_truncated_completions=True)
    tr.train()
    rows = {t: (float(a), int(mk.sum())) for s in tr.seen
            for t, a, mk in zip(texts_of_ids(tok, s), s["advantages"], s["completion_mask"])}
    # prompt 0: max_variance among 1 2 3 (not 0 3, which the truncated 0 would give); prompt 1: one complete row,
    # filled with the first truncated one; both advantage 0, the truncated row without loss tokens
    assert sorted(rows) == sorted(["a1", "c111", "y11", "u"])
    assert rows["a1"][0] == pytest.approx(-0.7071, abs=1e-3) and rows["c111"][0] == pytest.approx(0.7071, abs=1e-3)
    assert rows["y11"][0] == rows["u"][0] == 0.0 and rows["u"][1] == 0 and rows["y11"][1] > 0
    assert all(int(s["num_items_in_batch"]) == sum(n for _, n in rows.values()) for s in tr.seen)
    log = tr.state.log_history[0]
    assert log["pods/kept_reward"] == pytest.approx((1 + 3 + 2) / 3)  # the rows the update learns from
    assert log["pods/frac_reward_zero_std_before"] == 0.5 and log["pods/frac_reward_zero_std_after"] == 0.5

    plain, _ = make_trainer(pods_m=2, texts=TRUNC_TEXTS, truncated=TRUNCATED)  # not masked: rows like any other
    plain.train()
    want = [TRUNC_TEXTS[g * N + i] for g in range(2)
            for i in max_variance([float(t.count("1")) for t in TRUNC_TEXTS[g * N:(g + 1) * N]], 2)]
    assert "0" in want and sorted(t for s in plain.seen for t in texts_of_ids(tok, s)) == sorted(want)


def test_truncated_rows_stay_out_of_the_baseline_even_with_m_equal_n():
    tr, tok = make_trainer(pods_m=N, texts=TRUNC_TEXTS, truncated=TRUNCATED, mask_truncated_completions=True)
    tr.train()
    adv = {t: float(a) for s in tr.seen for t, a in zip(texts_of_ids(tok, s), s["advantages"])}
    # prompt 0: 1 2 3 standardised among themselves (stock TRL would count the truncated 0 in mean and std)
    assert [adv[t] for t in TRUNC_TEXTS[:4]] == pytest.approx([0.0, -1.0, 0.0, 1.0], abs=1e-3)
    assert [adv[t] for t in TRUNC_TEXTS[4:]] == [0.0] * 4


def nines_reward(completions, **kw):  # a second objective on another scale: 100 per "9"
    return [100.0 * c.count("9") for c in completions]


def test_normalize_then_sum_selects_on_the_reward_its_advantages_use():
    # Prompt 0: ("1"s, 100 x "9"s) = (0, 0) (0, 0) (0, 1000) (1, 900). The raw sum 0 0 1000 901 is all "9"s; TRL's
    # normalize_then_sum reward (each function standardised within the 4, then summed) weighs both objectives.
    texts = ["a", "b", "c" + "9" * 10, "d1" + "9" * 9, "e1", "f", "g1", "h"]
    tr, tok = make_trainer(pods_m=2, texts=texts, reward=[ones_reward, nines_reward],
                           multi_objective_aggregation="normalize_then_sum")
    tr.train()
    per_func = np.array([[t.count("1"), 100.0 * t.count("9")] for t in texts]).reshape(2, N, 2)  # (P, n, K)
    z = (per_func - per_func.mean(1, keepdims=True)) / (per_func.std(1, ddof=1, keepdims=True) + 1e-4)
    s = z.sum(2)  # (P, n) TRL's aggregated reward
    kept = [[i for i in max_variance(s[g], 2)] for g in range(2)]
    assert kept[0] == [0, 3] and max_variance(per_func[0].sum(1), 2) == [0, 2]  # raw-sum selection would differ
    c = np.array([s[g, kept[g]] - s[g, kept[g]].mean() for g in range(2)]).reshape(-1)  # minus the kept mean
    want = dict(zip([texts[g * N + i] for g in range(2) for i in kept[g]], c / (c.std(ddof=1) + 1e-4)))
    got = {t: float(a) for s_ in tr.seen for t, a in zip(texts_of(tok, s_), s_["advantages"])}
    assert sorted(got) == sorted(want)
    for t in want:
        assert got[t] == pytest.approx(want[t], abs=1e-5)


@pytest.mark.slow  # two training processes (docs/scale.md gives its time)
def test_two_processes_select_on_the_global_batch_and_keep_their_own_rows():
    # scripts/check_trl_pods_multiprocess.py under torch.distributed (gloo, CPU): rank 1 must keep rows of global
    # groups 2 and 3 (its offset), decided with rank 0's rewards and truncation flags; see the script's checks.
    script = Path(__file__).resolve().parents[1] / "scripts" / "check_trl_pods_multiprocess.py"
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    p = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2",
                        str(script)], capture_output=True, text=True, env=env, timeout=600)
    assert p.returncode == 0, p.stderr[-3000:]
    for rank, rows in ((0, "['ap1', 'as11111', 'bp', 'br1']"), (1, "['cr11', 'cs11', 'dq111', 'ds1']")):
        assert f"rank {rank}/2: pods_m=n gradients == stock GRPOTrainer" in p.stdout
        assert f"rank {rank}: pods_m=2 update saw exactly its 4 kept rows {rows}, kept advantages OK" in p.stdout


def test_cli_trains_and_saves_an_adapter(tmp_path, capsys):
    main = load_script("trl_pods").main
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


@pytest.mark.parametrize("rule", ["max_variance", "max_reward", "random"])
def test_select_rows_is_select_groups_when_every_row_is_a_candidate_and_puts_nan_rows_last(rule):
    from minipods.downsample import select_groups
    from minipods.scale.trl_pods import select_rows
    r = torch.tensor(np.random.default_rng(1).integers(0, 4, 48), dtype=torch.float32)  # 6 groups of 8
    got = select_rows(r, 8, 3, rule, np.random.default_rng([0, 5]))
    assert got == select_groups(r.numpy(), 8, 3, rule, generator=np.random.default_rng([0, 5]))
    r[[0, 1, 2, 3, 4, 5, 9]] = float("nan")  # group 0: 2 candidates (rows 6, 7); group 1: 7
    got = select_rows(r, 8, 3, rule, np.random.default_rng([0, 5]))
    assert got[:3] == [0, 6, 7] and 9 not in got[3:6] and len(got) == 18


def test_kept_advantages_follow_trl_conventions():
    from minipods.scale.trl_pods import kept_advantages
    r = torch.tensor([1.0, 5.0, 0.0, 1.0, 2.0, float("nan")])  # 3 prompts x m=2
    got = kept_advantages(r, 2, "group", "sum_then_normalize")
    want = group_advantages(r[:4], torch.tensor([0, 0, 1, 1]))
    torch.testing.assert_close(got[:4], want)
    assert got[4:].tolist() == [0.0, 0.0]  # a group with an unscorable row: nothing to compare with, no signal
    torch.testing.assert_close(kept_advantages(r, 2, "none", "sum_then_normalize")[:4],
                               torch.tensor([-2.0, 2.0, -0.5, 0.5]))
    batch = kept_advantages(r, 2, "batch", "sum_then_normalize")  # one std over all scored kept rewards
    std = torch.tensor([1.0, 5.0, 0.0, 1.0, 2.0]).std()
    torch.testing.assert_close(batch[:2], torch.tensor([-2.0, 2.0]) / (std + 1e-4))


def test_kept_advantages_of_an_all_equal_group_are_what_the_docstring_says():
    from minipods.scale.trl_pods import kept_advantages
    r = torch.full((8,), 0.1)  # eight equal rewards: the float32 mean is one ulp off
    assert group_advantages(r, torch.zeros(8, dtype=torch.long)).tolist() == [0.0] * 8
    got = kept_advantages(r, 8, "group", "sum_then_normalize")
    assert got.unique().numel() == 1 and float(got[0]) == pytest.approx(-7.4e-5, rel=0.01)  # TRL's, not 0
