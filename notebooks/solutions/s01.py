"""Notebook 01 (rollouts): worked answers. Each entry of SOLUTIONS is what `check` accepts; WHY says why."""

import torch


def positions(mask):
    # the running count of real tokens, minus 1: a row's first real token is 0 whatever the pads before it
    return (mask.cumsum(-1) - 1).clamp(min=0)


def completion_mask(ids, eos_ids):
    is_eos = torch.isin(ids, torch.tensor(eos_ids))
    eos_before = is_eos.int().cumsum(1) - is_eos.int()  # EOS tokens strictly before each position
    return (eos_before == 0).long()


SOLUTIONS = {"01.1": positions, "01.2": completion_mask, "01.3": 0.915, "01.4": 105}

WHY = {
    "01.1": "Under left padding the column index counts the pads; the model was trained on unpadded text, so each "
            "real token must get the position it would have without them: cumsum(mask) - 1 (the pads' values never "
            "matter, they are masked out).",
    "01.2": "The first EOS ends a completion and is kept (the update must teach the model to stop); everything after "
            "it is padding that generate wrote while other rows went on, EOS or not.",
    "01.3": "softmax(z / 0.3) puts ~92% of its mass on the top logit (4.0 vs 3.2: a gap of 0.8 becomes 2.7 after "
            "dividing by 0.3), so 915 of these 1,000 seeded draws pick it. A cold policy repeats itself: its n rollouts, "
            "and their rewards, differ less, and GRPO gets fewer mixed groups.",
    "01.4": "Arithmetic equals reading the weights when 2 N B / 362e12 = 0.5 N / 864e9, so B* = 362e12 x 0.5 / (2 x 864e9) "
            "= 104.7, compute-bound from B = 105: a quarter of bf16's 419 (section 5), because each weight is a quarter "
            "of the bytes; below it a decode step still costs about the same for one row as for B, so the paper's 64 "
            "rollouts per prompt stay cheap (a datasheet estimate that leaves out the 4-bit scales and unpacking).",
}
