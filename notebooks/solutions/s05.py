"""Notebook 05 (PODS vs GRPO): worked answers. SOLUTIONS is what `check` accepts; WHY says why."""

import math

from minipods.stats import t975


def seed_interval(per_seed):
    diffs = [sum(b) / len(b) - sum(a) / len(a) for a, b in per_seed.values()]  # one number per run
    k = len(diffs)
    mean = sum(diffs) / k
    sd = math.sqrt(sum((d - mean) ** 2 for d in diffs) / (k - 1))
    half = t975(k - 1) * sd / math.sqrt(k)
    return mean, mean - half, mean + half


def n_max(cm, m, prompts, gain):
    if cm.rollout.b <= 0:
        return float("inf")
    t_grpo = cm.fixed + cm.rollout(prompts * m) + cm.update(prompts * m)
    # fixed + a_r + b_r P n + update(P m) = gain x t_grpo
    return (gain * t_grpo - cm.fixed - cm.update(prompts * m) - cm.rollout.a) / (cm.rollout.b * prompts)


SOLUTIONS = {"05.1": seed_interval, "05.2": 1.809, "05.3": n_max, "05.4": 128}

WHY = {
    "05.1": "The run varies more than the questions: one difference per seed, then Student's t over the k seeds "
            "(k - 1 df, sample sd). Pooling every (seed, question) pair as independent gives a far narrower, "
            "wrong interval.",
    "05.2": "Rollout time linear in n: each extra rollout costs (10.1 - 7.5) / 48 s, so at n = 128 a PODS step is "
            "7.5 + 112 x 2.6 / 48 = 13.57 s and PODS pays iff a step is worth more than 13.57 / 7.5 = 1.809 GRPO steps "
            "(1.347 at n = 64): the extra cost grows with n - m, while GRPO's own step stays.",
    "05.3": "Solve fixed + a_r + b_r P n + update(P m) = gain x T_GRPO for n; with a free rollout line (b_r <= 0) "
            "every n pays.",
    "05.4": "With the fitted lines a GRPO step is 7.3 s, so gain 2 buys 14.6 s: PODS pays up to n = 141, so 128 is "
            "the largest of the five; the fixed 4.4 s per step is what makes GRPO's step dear.",
}
