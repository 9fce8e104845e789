"""Helpers of the teaching notebooks: their figures and secondary analyses, so that a student's path
through a notebook is short cells that say what they compute. Each helper is documented and used by one
notebook (sections below); the minipods package holds everything a notebook teaches.

A notebook imports this module from its own folder (`import lessons`: Jupyter starts a notebook's kernel
there; scripts/run_notebooks.py and the notebook tests put notebooks/ on PYTHONPATH).
"""

from __future__ import annotations

# ---------------------------------------------------------------- 01 rollouts

# ---------------------------------------------------------------- 02 rewards

def data_source_label(source: str) -> str:
    """`minipods.data.load_task`'s source, said without this machine's absolute path: the environment
    variable's name and the data folder's name ("GSM8K from $MINIPODS_GSM8K_DIR (folder 'gsm8k')"), or
    the hub dataset, or the synthetic task's label unchanged."""
    import os
    from pathlib import Path

    from minipods.data import ENV_DIR

    if not source.startswith("gsm8k:"):
        return source  # "synthetic", "synthetic (GSM8K not found)"
    where = source[len("gsm8k:"):]
    if where.startswith("hub:"):
        return f"GSM8K from the Hugging Face hub ({where[len('hub:'):]})"
    env = os.environ.get(ENV_DIR)
    via = f"${ENV_DIR}" if env and Path(env).resolve() == Path(where).resolve() else "data_dir"
    return f"GSM8K from {via} (folder {Path(where).resolve().name!r})"


def plot_group_rewards(rewards: dict, silent: dict, fires: dict):
    """Notebook 02, section 4: one panel per task, each group's n rewards scattered over its question
    (jittered, so equal rewards stay visible). rewards: task -> (P, n) tensor; silent: task -> groups
    with zero reward variance; fires: task -> (rollouts correct, rollouts with a format reward)."""
    import matplotlib.pyplot as plt
    import numpy as np

    fig, axes = plt.subplots(1, len(rewards), figsize=(11, 3.5), sharey=True)
    for ax, (name, r) in zip(np.atleast_1d(axes), rewards.items()):
        P, n = r.shape
        for g in range(P):
            ax.scatter(np.full(n, g) + np.random.default_rng(g).uniform(-0.15, 0.15, n), r[g], alpha=0.7)
        ax.set_title(f"{name}: {silent[name]}/{P} groups with zero reward variance\n"
                     f"{fires[name][0]}/{P * n} correct, {fires[name][1]}/{P * n} with a format reward")
        ax.set_xlabel("question (group)"); ax.set_xticks(range(P)); ax.set_ylim(-0.1, 1.2); ax.grid(alpha=0.3)
    np.atleast_1d(axes)[0].set_ylabel("reward (correct + format)")
    plt.tight_layout(); plt.show()


def plot_silent_probability(ns=(4, 16, 64)):
    """Notebook 02, section 5: P[all n rewards equal] = p^n + (1-p)^n against the per-question success
    probability p, one curve per group size n."""
    import matplotlib.pyplot as plt
    import numpy as np

    ps = np.linspace(0, 1, 201)
    fig, ax = plt.subplots(figsize=(7, 3.5))
    for n in ns:
        ax.plot(ps, ps ** n + (1 - ps) ** n, label=f"n = {n}")
    ax.set_xlabel("per-question success probability p"); ax.set_ylabel("P[all n rewards equal]")
    ax.set_title("zero-variance groups become rare as n grows"); ax.legend(loc="best"); plt.show()


# ---------------------------------------------------------------- 03 max-variance

# ---------------------------------------------------------------- 04 the GRPO update

# ---------------------------------------------------------------- 05 PODS vs GRPO
