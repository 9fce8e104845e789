"""PODS on TRL's GRPOTrainer: generate n rollouts per prompt, update on the m that `max_variance` keeps.

Paper (Xu et al., "Not All Rollouts are Useful", TMLR 2026), Algorithm 1, on top of TRL 1.16; docs/scale.md
has the user's side (settings, the 8-GPU command of scripts/trl_pods.py, what differs from minipods.train).

Where it hooks in: the dict TRL's `_generate_and_score_completions` returns keeps, in every per-row tensor, the m
rows per prompt selected on the reward the advantages use (`pods_rewards`), with `advantages` recomputed within
the kept m (`kept_advantages`) and `num_items_in_batch` recounted: TRL's loss, backward and optimizer step see only
the kept rows. Every process selects the same rows of the gathered global batch and keeps its own slice."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch
from trl import GRPOConfig, GRPOTrainer
from trl.trainer.utils import nanstd

from minipods.downsample import RULES, downsample
from minipods.rewards import correctness_reward, format_reward

# Row-unaligned multimodal fields (e.g. pixel_values concatenates every image's patches): not down-sampled here.
_IMAGE_KEYS = ("pixel_values", "image_grid_thw", "pixel_attention_mask", "image_sizes", "num_images")


@dataclass
class PODSGRPOConfig(GRPOConfig):
    """[`~trl.GRPOConfig`] plus PODS down-sampling: `pods_m` (the paper's m; n is `num_generations`), `pods_rule`."""
    pods_m: int | None = field(default=None, metadata={"help": (
        "Rollouts per prompt kept for the update (PODS's m), in [2, num_generations]; `None` keeps all (stock "
        "GRPO). Batch sizes count generated rollouts: a micro-batch trains on per_device_train_batch_size * "
        "pods_m / num_generations rows.")})
    pods_rule: str = field(default="max_variance", metadata={"help": (
        "PODS down-sampling rule: 'max_variance' (the paper's: keep the m rewards with the largest variance), "
        "'max_reward' (the m best) or 'random' (uniform, seeded by `seed` and the step), on the reward the "
        "advantages use; unscorable and masked truncated rows only fill a group with fewer than m others.")})

    def __post_init__(self):
        super().__post_init__()  # TRL derives steps_per_generation and generation_batch_size here
        if self.pods_m is None:
            self.pods_m = self.num_generations
        check_pods_config(self, self.world_size)


def check_pods_config(args, num_processes: int) -> None:
    """Raise a one-line ValueError for a PODS setting TRL's batching cannot carry."""
    n, m, spg = args.num_generations, args.pods_m, args.steps_per_generation
    if args.pods_rule not in RULES:
        raise ValueError(f"pods_rule must be one of {', '.join(RULES)}, got {args.pods_rule!r}")
    if isinstance(m, bool) or not isinstance(m, int) or not 2 <= m <= n:
        # m = 1 would leave one rollout per group: its group-normalised advantage is always 0 (no signal)
        raise ValueError(f"pods_m must be an integer in [2, num_generations={n}], got {m!r}")
    local = args.generation_batch_size // num_processes  # rows each process generates per generation
    if local % n:
        raise ValueError(f"each process must hold whole prompt groups: generation_batch_size / processes = {local} "
                         f"is not a multiple of num_generations = {n}")
    if (local // n * m) % spg:
        raise ValueError(f"the {local // n * m} kept rows per process ({local // n} prompts x pods_m {m}) do not split "
                         f"into steps_per_generation = {spg} equal micro-batches: make per_device_train_batch_size "
                         f"* pods_m a multiple of num_generations")


def pods_rewards(rewards_per_func: torch.Tensor, weights: torch.Tensor, n: int, aggregation: str) -> torch.Tensor:
    """(N,) the reward PODS selects on and computes advantages from; NaN where no function scored the row.
    rewards_per_func: (N, K), N = prompts * n, each prompt's n rows contiguous, NaN where unscored; weights: (K,).
    `sum_then_normalize`: the weighted sum. `normalize_then_sum`: TRL's aggregate, each function's reward
    standardised within the prompt's n rows (unbiased std, + 1e-4), then weighted and summed."""
    unscorable = torch.isnan(rewards_per_func).all(1)
    if aggregation == "sum_then_normalize":
        r = (rewards_per_func * weights).nansum(1)
    elif aggregation == "normalize_then_sum":
        g = rewards_per_func.view(-1, n, rewards_per_func.shape[1])  # (P, n, K)
        z = (g - torch.nanmean(g, 1, keepdim=True)) / (nanstd(g, dim=1, keepdim=True) + 1e-4)
        r = (z.reshape(-1, g.shape[2]) * weights).nansum(1)
    else:
        raise ValueError(f"unknown multi_objective_aggregation {aggregation!r}")
    r[unscorable] = torch.nan
    return r


def select_rows(rewards: torch.Tensor, n: int, m: int, rule: str, generator) -> list[int]:
    """Global rows (each prompt's m in increasing order) that `rule` keeps from every group of n rewards. A NaN
    reward (a row that cannot teach) is no candidate; NaN rows fill, in order, a group with fewer than m others."""
    r, kept = rewards.double().cpu().numpy(), []
    for start in range(0, r.size, n):
        rows = np.arange(start, start + n)
        ok, rest = rows[~np.isnan(r[rows])], rows[np.isnan(r[rows])]
        pick = ok[downsample(r[ok], m, rule, generator)] if ok.size >= m else np.concatenate([ok, rest[:m - ok.size]])
        kept.extend(sorted(pick.tolist()))
    return kept


def kept_advantages(rewards: torch.Tensor, m: int, scale_rewards: str, aggregation: str) -> torch.Tensor:
    """(R,) advantages of the kept rows from their `pods_rewards` (R = prompts * m, each prompt's m contiguous).
    `sum_then_normalize`: TRL's formula on groups of m instead of n, (r - mean) / (std + 1e-4), std unbiased;
    `scale_rewards` "group" (per group std), "batch" (one std over all kept rows) or "none" (no division).
    `normalize_then_sum` (the per-function standardisation is already in the reward): minus the kept group's
    mean, then TRL's last step, (a - mean) / (std + 1e-4) over all kept rows. NaN rewards get advantage 0."""
    g = rewards.view(-1, m)  # (P, m)
    adv = g - torch.nanmean(g, dim=1, keepdim=True)
    if aggregation == "sum_then_normalize":
        std = nanstd(rewards) if scale_rewards == "batch" else nanstd(g, dim=1, keepdim=True)  # unbiased, as TRL
        if scale_rewards != "none":
            adv = adv / (std + 1e-4)
    elif aggregation == "normalize_then_sum":
        adv = (adv - torch.nanmean(adv)) / (nanstd(adv) + 1e-4)
    else:
        raise ValueError(f"unknown multi_objective_aggregation {aggregation!r}")
    return torch.nan_to_num(adv.reshape(-1), nan=0.0)


class PODSGRPOTrainer(GRPOTrainer):
    """TRL's [`~trl.GRPOTrainer`] with PODS down-sampling between scoring and the update (module docstring)."""

    def __init__(self, model, reward_funcs=None, args: PODSGRPOConfig | None = None, **kwargs):
        if not isinstance(args, PODSGRPOConfig):
            raise ValueError("PODSGRPOTrainer needs args=PODSGRPOConfig(...) (it sets pods_m and pods_rule)")
        check_pods_config(args, args.world_size)  # again: args may have been edited after construction
        super().__init__(model, reward_funcs, args=args, **kwargs)
        self._pods_rewards_per_func = None

    def _calculate_rewards(self, inputs, prompts, completions, completion_ids_list):
        # (N, K) gathered from all processes; kept, since `_generate_and_score_completions` returns only advantages
        self._pods_rewards_per_func = super()._calculate_rewards(inputs, prompts, completions, completion_ids_list)
        return self._pods_rewards_per_func

    def _generate_and_score_completions(self, inputs):
        out = super()._generate_and_score_completions(inputs)
        if not self.model.training:  # evaluation: stock GRPO on all rollouts
            return out
        return self._pods_downsample(out, self._pods_rewards_per_func)

    def _pods_downsample(self, out: dict, rewards_per_func: torch.Tensor) -> dict:
        if any(k in out for k in _IMAGE_KEYS):
            raise NotImplementedError("PODSGRPOTrainer does not down-sample image inputs (pixel_values)")
        n, m, device = self.num_generations, self.args.pods_m, rewards_per_func.device
        weights = self.reward_weights.to(device)
        rewards_per_func = rewards_per_func.clone()  # (N, K), N = P * n over all processes
        if self.mask_truncated_completions:  # TRL zeroed exactly the truncated rows' completion_mask
            truncated = self.accelerator.gather(out["completion_mask"].sum(1)) == 0  # (N,)
            rewards_per_func[truncated.to(device)] = torch.nan  # no loss tokens: as unscorable
        rewards = pods_rewards(rewards_per_func, weights, n, self.multi_objective_aggregation)  # (N,)
        # Same seed on every process (they all select on the same global batch); fresh per generation.
        gen = np.random.default_rng([self.args.seed, self._step])
        rows = torch.tensor(select_rows(rewards, n, m, self.args.pods_rule, gen), device=device)  # (P*m,)
        adv = kept_advantages(rewards[rows], m, self.scale_rewards, self.multi_objective_aggregation)  # (P*m,)
        new = self._pods_keep_local(out, rows, adv)
        raw = pods_rewards(rewards_per_func, weights, n, "sum_then_normalize")  # TRL's logged `reward`, scale
        self._pods_log(raw, rewards.view(-1, n), rows, adv)
        return new

    def _pods_keep_local(self, out: dict, rows: torch.Tensor, adv: torch.Tensor) -> dict:
        """This process's kept rows of every per-row entry of `out`, in order, with the kept advantages."""
        B = out["prompt_ids"].shape[0]  # this process generated global rows [start, start + B)
        start = self.accelerator.process_index * B
        mine = (rows >= start) & (rows < start + B)
        local = (rows[mine] - start).to(out["prompt_ids"].device)  # (B*m/n,)
        new = {}
        for k, v in out.items():
            if isinstance(v, torch.Tensor) and v.ndim > 0 and v.shape[0] == B:
                v = v[local]
            elif isinstance(v, list) and len(v) == B:
                v = [v[i] for i in local.tolist()]
            new[k] = v
        new["advantages"] = adv[mine].to(out["advantages"].device)
        loss_mask = new["completion_mask"] if "tool_mask" not in new else new["completion_mask"] * new["tool_mask"]
        new["num_items_in_batch"] = self.accelerator.gather(loss_mask.sum()).sum()  # kept tokens, all processes
        return new

    def _pods_log(self, raw: torch.Tensor, groups: torch.Tensor, rows: torch.Tensor, adv: torch.Tensor) -> None:
        """Metrics (TRL's are over all n rollouts) and the completions table's advantages (NaN: dropped rows).
        raw: (N,) weighted reward sum, NaN for rows that cannot teach; groups: (P, n) the rewards selected on."""
        m = self.args.pods_m
        # A NaN row counts as its group's mean: "all equal" means no GRPO signal among the rows that can teach.
        groups = torch.where(torch.isnan(groups), torch.nanmean(groups, 1, keepdim=True).nan_to_num(0.0), groups)
        def frac_all_equal(g):  # (P, k) -> fraction of prompts whose k rewards are all equal
            return (g.amax(1) == g.amin(1)).float().mean().item()
        metrics = self._metrics["train"]
        metrics["pods/kept_reward"].append(torch.nanmean(raw[rows]).item())
        metrics["pods/kept_reward_std"].append(nanstd(raw[rows]).item())
        metrics["pods/frac_reward_zero_std_before"].append(frac_all_equal(groups))
        metrics["pods/frac_reward_zero_std_after"].append(frac_all_equal(groups.reshape(-1)[rows].view(-1, m)))
        logged = torch.full_like(raw, float("nan"))
        logged[rows] = adv
        for _ in range(len(logged)):  # TRL appended all N advantages last; replace them
            self._logs["advantages"].pop()
        self._logs["advantages"].extend(logged.tolist())


# Two reward functions whose sum is minipods' total_reward; TRL logs each (rewards/correctness/mean, ...).
def correctness(completions, gold, **kw):
    return [correctness_reward(c, g) for c, g in zip(completions, gold)]


def format_tags(completions, **kw):
    return [format_reward(c) for c in completions]
