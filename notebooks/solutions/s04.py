"""Notebook 04 (the GRPO update): worked answers. SOLUTIONS is what `check` accepts; WHY says why."""


def reduce(per_token, mask, loss_type):
    summed = per_token * mask  # padding contributes nothing
    if loss_type == "dapo":
        return summed.sum() / mask.sum()  # every real token weighs the same
    return (summed.sum(1) / mask.sum(1)).mean()  # "grpo": every completion weighs the same


SOLUTIONS = {"04.1": [(1.3, 1.0), (0.7, -1.0)], "04.2": 2.5, "04.3": reduce, "04.4": 1.99e-4}

WHY = {
    "04.1": "min(rho A, clip(rho) A) takes the clipped term only past 1 + eps when A > 0 (rho 1.3) or past 1 - eps "
            "when A < 0 (rho 0.7): the objective stops rewarding moves further in the favoured direction; a ratio "
            "that went the other way keeps its gradient, which pulls it back.",
    "04.2": "grpo gives each completion weight 1/2, shared by its tokens: 1/(2 x 10) = 0.05 per short-answer token; "
            "dapo gives every one of the 50 tokens 1/50 = 0.02: 2.5 times less.",
    "04.3": "Mask first; dapo divides the sum over real tokens by their number, grpo takes each row's token mean and "
            "then the mean over rows (reduce_loss's num_tokens and num_rows count the whole kept batch).",
    "04.4": "AdamW's first step: m^ = g and v^ = g^2 after bias correction, so the move is lr g / (|g| + 1e-8) = "
            "2e-4 x 3e-6 / 3.01e-6 = 1.99e-4, about lr however small g is (weight decay times 0 adds nothing).",
}
