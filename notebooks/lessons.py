"""Helpers of the teaching notebooks: their figures and secondary analyses, so that a student's path
through a notebook is short cells that say what they compute. Each helper is documented and used by one
notebook (sections below); the minipods package holds everything a notebook teaches.

A notebook imports this module from its own folder (`import lessons`: Jupyter starts a notebook's kernel
there; scripts/run_notebooks.py and the notebook tests put notebooks/ on PYTHONPATH).
"""

from __future__ import annotations

# ---------------------------------------------------------------- 01 rollouts

# ---------------------------------------------------------------- 02 rewards

# ---------------------------------------------------------------- 03 max-variance

# ---------------------------------------------------------------- 04 the GRPO update
# Notebook 04's helpers: the gradient bookkeeping of section 2b, the figures of sections 4 and 5, and
# the byte counts of a 4-bit model (its appendix).


def lora_gradient(lp, params, d_lp):
    """The flat (float64) gradient over `params` of a loss whose derivative with respect to the
    per-token log-probs `lp` is `d_lp` (same shape): backward from `lp` only, its graph kept for the
    next call. Parameters the loss does not reach get zeros."""
    import torch

    g = torch.autograd.grad(lp, params, grad_outputs=d_lp, retain_graph=True, allow_unused=True)
    return torch.cat([(x if x is not None else torch.zeros_like(p)).flatten() for x, p in zip(g, params)]).double()


def cosine(a, b) -> float:
    """Cosine of the angle between two flat vectors (0 when one of them is zero)."""
    return float(a @ b / (a.norm() * b.norm() + 1e-30))


def print_weight_table(lens, rewards, adv_std, adv_dr, weights: dict) -> None:
    """One row per kept rollout: its length, reward, standardised and Dr. GRPO advantage, and the
    per-token weight w_i (x 1e3) of each averaging variant in `weights` (name -> (G,) tensor)."""
    head = f"{'row':>3} {'|o_i|':>5} {'reward':>6} {'A_i':>6} {'A_Dr':>6}"
    print(f"{head} | per-token weight x 1e3: " + " | ".join(weights))
    for i in range(len(lens)):
        print(f"{i:3d} {int(lens[i]):5d} {float(rewards[i]):6.3f} {float(adv_std[i]):6.2f} {float(adv_dr[i]):6.3f} | "
              + " | ".join(f"{1e3 * float(w[i]):+9.3f}" for w in weights.values()))


def print_gradients(grads: dict, losses: dict) -> dict:
    """Print each variant's loss and LoRA gradient norm, then the pairwise cosines of the gradients;
    return the cosines, keyed by (name, name)."""
    for name, g in grads.items():
        print(f"{name:30s} loss {losses[name]:+.5f} | LoRA gradient norm {float(g.norm()):.3e}")
    names, cos = list(grads), {}
    for i in range(len(names)):
        for j in range(i + 1, len(names)):
            cos[names[i], names[j]] = cosine(grads[names[i]], grads[names[j]])
            print(f"cosine({names[i]}, {names[j]}) = {cos[names[i], names[j]]:+.3f}")
    return cos


def plot_update_cost(cost: list[dict], repeats: int, fit: tuple, micro: int) -> None:
    """Section 4's figure: update seconds against m (min and median of `repeats`, the line `fit` =
    (slope, intercept, R^2) through the minima), and the activations held for backward by one forward
    over all m and by the micro-batched grpo_update (rows of `cost`: m, t_min, t_med, act_all, act_upd
    in MiB)."""
    import matplotlib.pyplot as plt

    ms = [c["m"] for c in cost]
    slope, icept, r2 = fit
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(11, 3.4))
    a1.plot(ms, [c["t_min"] for c in cost], "o-", label=f"min of {repeats}")
    a1.plot(ms, [c["t_med"] for c in cost], "x", color="grey", label=f"median of {repeats}")
    a1.plot(ms, [icept + slope * k for k in ms], ":", color="tab:blue", label=f"fit, R² = {r2:.2f}")
    a1.set_xlabel("kept rollouts m"); a1.set_ylabel("update seconds"); a1.legend(loc="best", fontsize=8)
    a1.set_title("update time grows with m")
    a2.plot(ms, [c["act_all"] for c in cost], "o-", color="tab:orange", label="one forward over all m")
    a2.plot(ms, [c["act_upd"] for c in cost], "s--", color="tab:green", label=f"grpo_update, micro-batches of {micro}")
    a2.set_xlabel("kept rollouts m"); a2.set_ylabel("activations held for backward (MiB)")
    a2.legend(loc="best", fontsize=8)
    a2.set_title("activation memory is capped by the micro-batch")
    plt.tight_layout(); plt.show()


def nbytes(tensors) -> int:
    """Bytes of the tensors' elements."""
    return sum(t.numel() * t.element_size() for t in tensors)


def quant_state_bytes(model) -> dict:
    """Bytes of the bitsandbytes 4-bit layers of `model`: the packed weights (two 4-bit weights per
    uint8), their number of weights, and the quantisation scales (each block's absmax; with double
    quantisation those are 8-bit and carry their own float32 scales, state2)."""
    import bitsandbytes as bnb

    out = {"packed": 0, "weights": 0, "absmax": 0, "absmax of absmax": 0}
    for mod in model.modules():
        if isinstance(mod, bnb.nn.Linear4bit):  # the bitsandbytes layers (not peft's LoRA wrappers around them)
            qs = mod.weight.quant_state
            out["packed"] += nbytes([mod.weight])
            out["weights"] += mod.in_features * mod.out_features
            out["absmax"] += nbytes([qs.absmax])
            if getattr(qs, "state2", None) is not None:
                out["absmax of absmax"] += nbytes([qs.state2.absmax])
    return out


def qlora_memory(q_model, f_model, optimizer, activations: float) -> dict:
    """The bytes of one 4-bit LoRA update, part by part: the frozen base (4-bit linear weights with
    their scales; the unquantised rest: embeddings, norms), the same base in fp32 (`f_model`) for
    comparison, the adapter, its gradient, the optimizer's state, and `activations` (one micro-batch's
    saved activations, measured by the caller)."""
    import torch

    q = quant_state_bytes(q_model)
    rest = [p for p in q_model.parameters() if not p.requires_grad and p.dtype != torch.uint8]
    train_p = [p for p in q_model.parameters() if p.requires_grad]
    return {
        "base: 4-bit linear weights + scales": q["packed"] + q["absmax"] + q["absmax of absmax"],
        "base: unquantised (embeddings, norms)": nbytes(rest),
        "base: everything in fp32 instead": nbytes([p for p in f_model.parameters() if not p.requires_grad]),
        "LoRA adapter": nbytes(train_p),
        "gradients": nbytes(train_p),
        "AdamW state": nbytes([t for st in optimizer.state.values() for t in st.values()
                               if torch.is_tensor(t) and t.dim() > 0]),  # the moments (not the 0-d step count)
        "activations (1 micro-batch)": activations,
    }


def plot_memory(mem: dict) -> None:
    """Section 5's figure: `qlora_memory`'s parts as horizontal bars, in MiB."""
    import matplotlib.pyplot as plt

    mib = [v / 2**20 for v in mem.values()]
    fig, ax = plt.subplots(figsize=(8, 3))
    colors = ["tab:blue", "tab:cyan", "lightgrey", "tab:green", "tab:olive", "tab:orange", "tab:red"]
    ax.barh(list(mem), mib, color=colors)
    for i, v in enumerate(mib):
        ax.text(v, i, f" {v:.2f} MiB", va="center", fontsize=8)
    ax.set_xlim(0, 1.25 * max(mib)); ax.set_xlabel("MiB"); ax.invert_yaxis()
    ax.set_title("memory of a 4-bit LoRA update")
    plt.tight_layout(); plt.show()


# ---------------------------------------------------------------- 05 PODS vs GRPO
