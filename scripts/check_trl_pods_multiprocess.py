"""Check PODSGRPOTrainer across processes (tiny model, scripted rollouts, no GPU needed).

    torchrun --nproc_per_node 2 scripts/check_trl_pods_multiprocess.py                   # 2 CPU processes, gloo
    python -m torch.distributed.run --nproc_per_node 2 scripts/check_trl_pods_multiprocess.py   # the same
    accelerate launch --num_processes 8 scripts/check_trl_pods_multiprocess.py            # 8 GPUs

Every process generates 2 prompts x 4 scripted rollouts per generation (reward = number of "1"s; one rollout of
global group 3 is truncated). Checked on every rank:
  1. pods_m = num_generations: the gradients TRL's optimizer receives equal stock GRPOTrainer's;
  2. pods_m = 2, mask_truncated_completions, steps_per_generation 4 > accumulation 2 (old log-probs exist): this
     rank's update sees exactly its own prompts' kept rows (max_variance among the rows that are not truncated,
     decided on the truncation flags of all ranks), with advantages normalised within the kept pair; the loss
     normaliser counts the kept tokens of all ranks; every kept row carries its own old log-probs (importance
     ratio 1 before the first optimizer step).
Exits non-zero on the first mismatch.
"""
import os
import sys
import types
from pathlib import Path

import torch
from accelerate import PartialState
from datasets import Dataset
from transformers import TrainerCallback
from trl import GRPOConfig, GRPOTrainer

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from anywhere without installing minipods
from minipods.downsample import max_variance  # noqa: E402
from minipods.grpo import group_advantages  # noqa: E402
from minipods.scale.trl_pods import PODSGRPOConfig, PODSGRPOTrainer  # noqa: E402
from minipods.twins.tiny import tiny_policy  # noqa: E402

N, PROMPTS_PER_RANK = 4, 2
REWARDS = [[1, 2, 3, 5], [0, 1, 1, 0], [2, 2, 2, 2], [0, 3, 1, 1], [4, 0, 0, 1], [1, 1, 0, 2], [3, 0, 3, 0],
           [0, 0, 0, 1]]  # per global prompt group; cycled for more than 4 ranks


def truncated(row: int) -> bool:  # slot 0 of global group 3 (reward 0): without it, max_variance keeps 3 and 1
    g, i = divmod(row, N)
    return g % len(REWARDS) == 3 and i == 0


def text(row: int) -> str:  # a unique completion per global row: group letter, slot letter, then the "1"s
    g, i = divmod(row, N)
    return chr(97 + g % 26) + "pqrs"[i] + "1" * REWARDS[g % len(REWARDS)][i]


def ones_reward(completions, **kw):
    return [float(c.count("1")) for c in completions]


def run(pods_m, **kw):
    state = PartialState()
    model, tok = tiny_policy(seed=0)
    common = dict(output_dir=f"/tmp/minipods-trl-mp-{os.getpid()}", num_generations=N,
                  per_device_train_batch_size=N, gradient_accumulation_steps=2, max_completion_length=8,
                  max_steps=1, learning_rate=1e-2, use_cpu=not torch.cuda.is_available(), bf16=False,
                  gradient_checkpointing=False, report_to="none", save_strategy="no", disable_tqdm=True,
                  shuffle_dataset=False, dataloader_num_workers=0, seed=0, logging_strategy="no")
    common.update(kw)
    args = GRPOConfig(**common) if pods_m is None else PODSGRPOConfig(pods_m=pods_m, **common)
    cls = GRPOTrainer if pods_m is None else PODSGRPOTrainer
    ds = Dataset.from_list([{"prompt": f"q{i}:"} for i in range(64)])
    tr = cls(model, ones_reward, args=args, train_dataset=ds, processing_class=tok)

    def scripted(self, prompt_ids, images, multimodal_fields, num_generations, **_):
        start = state.process_index * len(prompt_ids)  # this rank's rows in the global batch
        return [tok(text(j), add_special_tokens=False).input_ids + ([] if truncated(j) else [tok.eos_token_id])
                for j in range(start, start + len(prompt_ids))], None
    tr._generate_single_turn = types.MethodType(scripted, tr)
    seen, logps, grads = [], [], []
    inner, inner_logps = tr.compute_loss, tr._get_per_token_logps_and_entropies
    tr.compute_loss = lambda model, inputs, **k: (seen.append(inputs), inner(model, inputs, **k))[1]

    def spy_logps(*a, **k):  # the loss's own forward asks for entropies
        out = inner_logps(*a, **k)
        if k.get("compute_entropy"):
            logps.append(out[0].detach())
        return out
    tr._get_per_token_logps_and_entropies = spy_logps

    class Grads(TrainerCallback):
        def on_pre_optimizer_step(self, args, st, control, **k):
            grads.append({n: p.grad.clone() for n, p in tr.model.named_parameters() if p.grad is not None})
    tr.add_callback(Grads())
    tr.train()
    return state, tok, seen, logps, grads


def expected(r):  # this rank's kept rows {text: advantage}, computed here from the script's own tables
    rows = []
    for g in range(r * PROMPTS_PER_RANK, (r + 1) * PROMPTS_PER_RANK):
        ok = [j for j in range(g * N, (g + 1) * N) if not truncated(j)]  # >= 2 complete rows in every group
        rows += [ok[i] for i in max_variance([float(text(j).count("1")) for j in ok], 2)]
    rewards = torch.tensor([float(text(j).count("1")) for j in rows])
    adv = group_advantages(rewards, torch.tensor([j // N for j in rows]))
    return {text(j): float(a) for j, a in zip(rows, adv)}


def main():
    state, _, _, _, (g_stock,) = run(None)
    *_, (g_pods,) = run(N)
    for k in g_stock:
        torch.testing.assert_close(g_stock[k], g_pods[k], rtol=1e-5, atol=1e-7)
    r = state.process_index
    print(f"rank {r}/{state.num_processes}: pods_m=n gradients == stock GRPOTrainer ({len(g_stock)} tensors)")

    _, tok, seen, logps, grads = run(2, mask_truncated_completions=True, max_steps=2, per_device_train_batch_size=2,
                                     steps_per_generation=4)
    assert len(seen) == len(logps) == 4 and len(grads) == 2, (r, len(seen), len(grads))
    got = {}
    for s in seen:
        for ids, a in zip(s["completion_ids"], s["advantages"]):
            got[tok.decode(ids, skip_special_tokens=True)] = float(a)
    want = expected(r)
    assert sorted(got) == sorted(want), (r, sorted(got), sorted(want))
    assert all(abs(got[t] - want[t]) < 1e-5 for t in want), (r, got, want)
    total = torch.tensor(sum(int(s["completion_mask"].sum()) for s in seen))
    if state.num_processes > 1:
        torch.distributed.all_reduce(total)
    assert all(int(s["num_items_in_batch"]) == int(total) for s in seen), (r, total)
    for s, lp in zip(seen[:2], logps[:2]):  # before the first optimizer step the policy has not moved
        ratio = torch.exp(lp - s["old_per_token_logps"])[s["completion_mask"].bool()]
        assert (ratio - 1).abs().max() < 1e-6, (r, ratio)
    print(f"rank {r}: pods_m=2 update saw exactly its {len(got)} kept rows {sorted(got)}, kept advantages OK, "
          f"loss normaliser = {int(total)} kept tokens over all ranks, old log-probs aligned (ratio 1)")


if __name__ == "__main__":
    main()
