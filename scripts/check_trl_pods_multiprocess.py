"""Check PODSGRPOTrainer across processes (tiny model, scripted rollouts, no GPU needed).

    torchrun --nproc_per_node 2 scripts/check_trl_pods_multiprocess.py                   # 2 CPU processes, gloo
    accelerate launch --num_processes 8 scripts/check_trl_pods_multiprocess.py            # 8 GPUs

Every process generates 2 prompts x 4 scripted rollouts per step (reward = number of "1"s). Checked on every rank:
  1. pods_m = num_generations: the gradients TRL's optimizer receives equal stock GRPOTrainer's;
  2. pods_m = 2: this rank's update sees exactly its own prompts' max_variance rows (2 per prompt), with
     advantages normalised within the kept pair, and the loss normaliser counts the kept tokens of all ranks.
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


def text(row: int) -> str:  # a unique completion per global row: group letter, slot letter, then the "1"s
    g, i = divmod(row, N)
    return chr(97 + g % 26) + "pqrs"[i] + "1" * REWARDS[g % len(REWARDS)][i]


def ones_reward(completions, **kw):
    return [float(c.count("1")) for c in completions]


def run(pods_m):
    state = PartialState()
    model, tok = tiny_policy(seed=0)
    common = dict(output_dir=f"/tmp/minipods-trl-mp-{os.getpid()}", num_generations=N,
                  per_device_train_batch_size=N, gradient_accumulation_steps=PROMPTS_PER_RANK, max_completion_length=8,
                  max_steps=1, learning_rate=1e-2, use_cpu=not torch.cuda.is_available(), bf16=False,
                  gradient_checkpointing=False, report_to="none", save_strategy="no", disable_tqdm=True,
                  shuffle_dataset=False, dataloader_num_workers=0, seed=0, logging_strategy="no")
    args = GRPOConfig(**common) if pods_m is None else PODSGRPOConfig(pods_m=pods_m, **common)
    cls = GRPOTrainer if pods_m is None else PODSGRPOTrainer
    ds = Dataset.from_list([{"prompt": f"q{i}:"} for i in range(64)])
    tr = cls(model, ones_reward, args=args, train_dataset=ds, processing_class=tok)

    def scripted(self, prompt_ids, images, multimodal_fields, num_generations, **_):
        start = state.process_index * len(prompt_ids)  # this rank's rows in the global batch
        return [tok(text(start + i), add_special_tokens=False).input_ids + [tok.eos_token_id]
                for i in range(len(prompt_ids))], None
    tr._generate_single_turn = types.MethodType(scripted, tr)
    seen, grads = [], []
    inner = tr.compute_loss
    tr.compute_loss = lambda model, inputs, **k: (seen.append(inputs), inner(model, inputs, **k))[1]

    class Grads(TrainerCallback):
        def on_pre_optimizer_step(self, args, st, control, **k):
            grads.append({n: p.grad.clone() for n, p in tr.model.named_parameters() if p.grad is not None})
    tr.add_callback(Grads())
    tr.train()
    return state, tok, seen, grads[0]


def main():
    state, _, _, g_stock = run(None)
    _, _, _, g_pods = run(N)
    for k in g_stock:
        torch.testing.assert_close(g_stock[k], g_pods[k], rtol=1e-5, atol=1e-7)
    r = state.process_index
    print(f"rank {r}/{state.num_processes}: pods_m=n gradients == stock GRPOTrainer ({len(g_stock)} tensors)")

    _, tok, seen, _ = run(2)
    got = {}
    for s in seen:
        for ids, mask, a in zip(s["completion_ids"], s["completion_mask"], s["advantages"]):
            got[tok.decode(ids[mask.bool()], skip_special_tokens=True)] = float(a)
    want_rows = [g * N + i for g in range(r * PROMPTS_PER_RANK, (r + 1) * PROMPTS_PER_RANK)
                 for i in max_variance([float(text(g * N + j).count("1")) for j in range(N)], 2)]
    want_adv = group_advantages(torch.tensor([float(text(j).count("1")) for j in want_rows]),
                                torch.tensor([j // N for j in want_rows]))
    want = {text(j): float(a) for j, a in zip(want_rows, want_adv)}
    assert sorted(got) == sorted(want), (r, sorted(got), sorted(want))
    assert all(abs(got[t] - want[t]) < 1e-5 for t in want), (r, got, want)
    total = torch.tensor(sum(int(s["completion_mask"].sum()) for s in seen))
    if state.num_processes > 1:
        torch.distributed.all_reduce(total)
    assert all(int(s["num_items_in_batch"]) == int(total) for s in seen), (r, total)
    print(f"rank {r}: pods_m=2 update saw exactly its {len(got)} max_variance rows {sorted(got)}, "
          f"kept advantages OK, loss normaliser = {int(total)} kept tokens over all ranks")


if __name__ == "__main__":
    main()
