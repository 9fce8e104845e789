"""The teaching notebooks' figures, timing tools and data labels. What a notebook teaches (its
calculations, with the maths beside them) stands in its own cells; this module only draws, times and
labels. A notebook imports it from its own folder, where Jupyter starts its kernel (the tests and
scripts/run_notebooks.py put notebooks/ on PYTHONPATH).
"""

from __future__ import annotations

# ---------------------------------------------------------------- 01 rollouts, 02 rewards


def data_source_label(source: str) -> str:
    """`minipods.data.load_task`'s source said without this machine's path: the environment variable's
    name and the data folder's name, or the hub dataset, or the synthetic task's label unchanged."""
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


def plot_attention_mask(ro) -> None:
    """The rollouts' attention mask, prompt and completion side by side: black = real token."""
    import matplotlib.pyplot as plt
    import torch

    mask = torch.cat([ro.prompt_mask, ro.completion_mask], 1).cpu()
    fig, ax = plt.subplots(figsize=(10, 0.25 * len(ro) + 1.2))
    ax.imshow(mask, aspect="auto", cmap="Greys", interpolation="nearest", vmin=0, vmax=1)
    ax.axvline(ro.prompt_ids.shape[1] - 0.5, color="tab:red", lw=2, label="prompt | completion")
    ax.set_xlabel("token column"); ax.set_ylabel("row (prompt-major)")
    ax.set_title("attention mask: black = real token, white = padding (left in the prompt, right after EOS)")
    ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0)); plt.show()


def weight_matmul_seconds(model, batch_sizes, repeats: int = 3) -> dict:
    """{B: seconds} of one decode step's matrix products alone: F.linear on the weight of every
    nn.Linear of `model` (base projections, LoRA's A and B, the LM head) with B rows of one token each
    (random inputs on the weight's own device and dtype), fastest of `repeats` rounds over all B."""
    import time

    import torch
    ws = [m.weight for m in model.modules() if isinstance(m, torch.nn.Linear)]
    xs = {B: [torch.randn(B, 1, w.shape[1], dtype=w.dtype, device=w.device) for w in ws] for B in batch_sizes}
    sync = torch.cuda.synchronize if any(w.is_cuda for w in ws) else (lambda: None)
    best = {B: float("inf") for B in batch_sizes}
    with torch.no_grad():
        for _ in range(repeats):  # in rounds: a slow spell on a shared CPU then hits every B, not one
            for B in batch_sizes:
                sync(); t0 = time.perf_counter()  # noqa: E702
                for w, x in zip(ws, xs[B]):
                    torch.nn.functional.linear(x, w)
                sync(); best[B] = min(best[B], time.perf_counter() - t0)  # noqa: E702
    return best


def plot_batch_timing(rows: list[dict], new_tokens: int, repeats: int) -> None:
    """Notebook 01's section 5: throughput against perfect scaling, and seconds per generate call
    (fastest and median) against the batch size B; rows: B, call_s, median_s, tokens_per_s."""
    import matplotlib.pyplot as plt
    import torch

    Bs, secs, tps, meds = ([r[k] for r in rows] for k in ("B", "call_s", "tokens_per_s", "median_s"))
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(10, 3.5))
    a1.plot(Bs, tps, "o-", label="measured (fastest)")
    a1.plot(Bs, [tps[0] * b for b in Bs], "--", color="grey", label="perfect scaling (B x batch-1)")
    a1.set_xlabel("batch size B"); a1.set_ylabel("tokens / s"); a1.set_xscale("log", base=2); a1.legend(loc="best")
    a1.set_title("throughput")
    a2.plot(Bs, secs, "o-", label="fastest"); a2.plot(Bs, meds, "x", color="grey", label=f"median of {repeats}")
    a2.set_xlabel("batch size B"); a2.set_ylabel("seconds per call"); a2.set_xscale("log", base=2)
    a2.legend(loc="best"); a2.set_title("time per generate call")
    fig.suptitle(f"generation, {new_tokens} new tokens, {torch.get_num_threads()} CPU threads")
    plt.tight_layout(); plt.show()


def plot_group_rewards(rewards: dict, silent: dict, fires: dict):
    """Notebook 02's section 4: one panel per task, each group's n rewards over its question (jittered).
    rewards: task -> (P, n) tensor; silent: task -> zero-variance groups; fires: task -> (correct, format)."""
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


def plot_right_of_n(counts: dict, n: int):
    """Notebook 02's section 4, training runs: per seed, its steps split by the group's right answers (0..n).
    counts: seed -> Counter {right answers: steps}; 1..n-1 are mixed groups (hatched bars are silent)."""
    import matplotlib.pyplot as plt
    import numpy as np

    seeds = sorted(counts)
    fig, ax = plt.subplots(figsize=(9, 3.8))
    left = np.zeros(len(seeds))
    for k in range(n + 1):
        width = np.array([counts[s][k] for s in seeds], float)
        ax.barh(range(len(seeds)), width, left=left, hatch="//" if k in (0, n) else None,
                color=plt.cm.viridis(k / n), edgecolor="white", label=f"{k} of {n} right" + (" (silent)" if k in (0, n) else ""))
        left += width
    ax.set_yticks(range(len(seeds)), [f"seed {s}" for s in seeds]); ax.invert_yaxis()
    ax.set_xlabel("training steps (one question, one group of rollouts each)")
    ax.set_title("the class study's GRPO runs: each step's group, by right answers")
    ax.legend(loc="center left", bbox_to_anchor=(1.01, 0.5), fontsize=8); plt.tight_layout(); plt.show()


def plot_silent_probability(ns=(4, 16, 64)):
    """Notebook 02's section 5: P[all n rewards equal] = p^n + (1-p)^n against p, one curve per n."""
    import matplotlib.pyplot as plt
    import numpy as np

    ps = np.linspace(0, 1, 201)
    fig, ax = plt.subplots(figsize=(7, 3.5))
    for n in ns:
        ax.plot(ps, ps ** n + (1 - ps) ** n, label=f"n = {n}")
    ax.set_xlabel("per-question success probability p"); ax.set_ylabel("P[all n rewards equal]")
    ax.set_title("zero-variance groups become rare as n grows"); ax.legend(loc="best"); plt.show()


# ---------------------------------------------------------------- 03 max-variance


def selection_times(select, brute_force, ns, bf_ns, rng, repeat=5) -> dict:
    """Notebook 03's section 6: CPU seconds (time.process_time, which other jobs on a shared CPU do not
    stretch) of select(r, n // 4) for each n in ns, and of brute_force(r, k // 2) and select(r, k // 2)
    for each k in bf_ns, on uniform random rewards: the fastest of `repeat` calls (3 above n = 2^16),
    with the median for ns. Returns lists ns, fast, fast_median, bf_ns, bf, bf_fast."""
    import time

    import numpy as np

    def timings(fn, k):
        ts = []
        for _ in range(k):
            t = time.process_time(); fn(); ts.append(time.process_time() - t)  # noqa: E702
        return min(ts), float(np.median(ts))

    fast = []
    for n in ns:
        r = rng.random(n)  # drawn outside the timed call
        fast.append(timings(lambda: select(r, n // 4), 3 if n > 2 ** 16 else repeat))
    bf = [timings(lambda: brute_force(rng.random(k), k // 2), 2)[0] for k in bf_ns]
    bf_fast = [timings(lambda: select(rng.random(k), k // 2), repeat)[0] for k in bf_ns]
    return dict(ns=list(ns), fast=[f[0] for f in fast], fast_median=[f[1] for f in fast], bf_ns=list(bf_ns),
                bf=bf, bf_fast=bf_fast)


def plot_selection_times(t: dict) -> None:
    """Section 6's figure: max_variance against n log n (left, log-log), brute force for small n (right)."""
    import matplotlib.pyplot as plt
    import numpy as np

    fig, (a1, a2) = plt.subplots(1, 2, figsize=(11, 3.8))
    ns = np.array(t["ns"])
    a1.loglog(ns, t["fast"], "o-", label="max_variance (m = n/4), fastest")
    a1.loglog(ns, t["fast_median"], "x", color="grey", label="median of the repeats")
    ref = ns * np.log2(ns)
    a1.loglog(ns, t["fast"][-1] * ref / ref[-1], "--", color="grey", label=r"$\propto n \log n$")
    a1.set_xlabel("n"); a1.set_ylabel("CPU seconds"); a1.legend(loc="best"); a1.set_title("sort + prefix sums")
    a2.semilogy(t["bf_ns"], t["bf"], "o-", color="tab:red", label=r"brute force over $\binom{n}{n/2}$")
    a2.semilogy(t["bf_ns"], t["bf_fast"], "o-", label="max_variance")
    a2.set_xlabel("n"); a2.set_ylabel("CPU seconds"); a2.legend(loc="best"); a2.set_title("brute force explodes")
    plt.tight_layout(); plt.show()


def plot_kept(r, rules: dict) -> None:
    """Section 7's figure: one row per rule (name -> kept indices), every reward grey, the kept ones blue."""
    import matplotlib.pyplot as plt
    import numpy as np

    r = np.asarray(r)
    fig, ax = plt.subplots(figsize=(8, 3))
    jitter = np.random.default_rng(0).uniform(-0.25, 0.25, len(r))
    for row, keep in enumerate(rules.values()):
        ax.scatter(r, row + jitter, color="lightgrey", s=50)
        ax.scatter(r[keep], row + jitter[keep], color="tab:blue", s=50)
    m = len(next(iter(rules.values())))
    ax.set_yticks(range(len(rules)), list(rules)); ax.invert_yaxis(); ax.set_xlabel("reward")
    ax.set_title(f"kept (blue) vs. left out (grey), n = {len(r)}, m = {m}"); plt.tight_layout(); plt.show()


def plot_gradient_cosines(res: dict, ms, n: int, avg_cos: dict | None = None) -> None:
    """Section 8's figure from `gradients.compare_rules`: each rule's cosine to the full-n gradient per
    non-silent pool (dots; the line their mean; random: its draws' 10-90% range as a bar; avg_cos, m ->
    per-pool cosines of random's gradient averaged over its draws, as open diamonds) and its norm
    relative to the full-n gradient's."""
    import matplotlib.pyplot as plt
    import numpy as np

    from minipods.analysis.gradients import RULES

    live = ~res["silent_pool"]
    colors = {"max_variance": "tab:blue", "max_reward": "tab:red", "random": "tab:grey"}
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(11, 3.8))
    for k, rule in enumerate(RULES):
        x = np.arange(len(ms)) + 0.08 * (k - 1)  # small offsets so the rules do not overlap
        a1.plot(x, [res["m"][m][rule]["cos_mean"] for m in ms], "o-", color=colors[rule], label=rule)
        for xm, m in zip(x, ms):
            a1.scatter([xm] * int(live.sum()), res["m"][m][rule]["cos"][live], color=colors[rule], s=12, alpha=0.4)
            if rule == "random" and live.any():
                d = res["m"][m]["random"]["cos_draws"][live].ravel()
                a1.vlines(xm, np.nanpercentile(d, 10), np.nanpercentile(d, 90), color=colors[rule], lw=3, alpha=0.3)
        a2.plot(x, [res["m"][m][rule]["norm_ratio_mean"] for m in ms], "o-", color=colors[rule], label=rule)
    if avg_cos is not None:
        x = np.arange(len(ms)) + 0.16
        a1.plot(x, [np.nanmean(avg_cos[m][live]) for m in ms], "D--", mfc="none", color="black",
                label="random: its draws' average gradient")
        for xm, m in zip(x, ms):
            a1.scatter([xm] * int(live.sum()), avg_cos[m][live], marker="D", facecolors="none", color="black", s=14)
    a1.legend(fontsize=8, loc="lower right")
    for a in (a1, a2):
        a.set_xticks(range(len(ms)), ms); a.set_xlabel(f"m kept of n = {n}"); a.grid(alpha=0.3)
    a2.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))  # outside: clear of every point
    a1.set_ylabel("cosine to the full-n gradient"); a1.set_title("how much of the full-n direction is kept")
    a2.set_ylabel("|subset gradient| / |full-n gradient|"); a2.set_title("gradient norm")
    plt.tight_layout(); plt.show()


def plot_silent_curve(curve: dict, m: int, title: str) -> None:
    """Section 9's figure from `gradients.silent_curve`: observed and predicted silent fractions against n."""
    import matplotlib.pyplot as plt

    ns = curve["n"]
    fig, ax = plt.subplots(figsize=(7, 3.8))
    ax.plot(ns, curve["observed"], "o-", label="observed: all-equal subgroups of the pool")
    ax.plot(ns, curve["predicted"], "s--", label=r"predicted: mean of $p^n + (1-p)^n$")
    for p, ls in ((0.05, ":"), (0.2, "-."), (0.5, (0, (6, 2, 1, 2, 1, 2)))):
        ax.plot(ns, [p ** k + (1 - p) ** k for k in ns], ls=ls, color="dimgrey", lw=1, label=f"one prompt with p = {p}")
    ax.axvline(m, color="tab:red", lw=0.8, label=f"GRPO n = m = {m}")
    ax.set_xlabel("n (rollouts per prompt)"); ax.set_ylabel("fraction of silent groups"); ax.set_ylim(-0.02, 1.02)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0)); ax.grid(alpha=0.3)
    ax.set_title(title); plt.tight_layout(); plt.show()


# ---------------------------------------------------------------- 04 the GRPO update


def plot_update_cost(cost: list[dict], repeats: int, fit: tuple, micro: int) -> None:
    """Section 4's figure: update seconds against m (min and median, the line fit = (slope, intercept,
    R^2) through the minima), and activations held for backward (MiB): one forward over all m vs grpo_update."""
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
    a2.legend(loc="best", fontsize=8); a2.set_title("activation memory is capped by the micro-batch")
    plt.tight_layout(); plt.show()


def plot_memory(mem: dict) -> None:
    """Section 5's figure: the parts of a 4-bit LoRA update's memory (name -> bytes) as bars, in MiB."""
    import matplotlib.pyplot as plt

    mib = [v / 2**20 for v in mem.values()]
    fig, ax = plt.subplots(figsize=(8, 3))
    ax.barh(list(mem), mib, color=["tab:blue", "tab:cyan", "lightgrey", "tab:green", "tab:olive", "tab:orange", "tab:red"])
    for i, v in enumerate(mib):
        ax.text(v, i, f" {v:.2f} MiB", va="center", fontsize=8)
    ax.set_xlim(0, 1.25 * max(mib)); ax.set_xlabel("MiB"); ax.invert_yaxis()
    ax.set_title("memory of a 4-bit LoRA update"); plt.tight_layout(); plt.show()


# ---------------------------------------------------------------- 05 PODS vs GRPO


def plot_phase_times(rows: dict) -> None:
    """Each arm's rollout and update seconds per step (rows: arm -> training rows); a ring marks a step
    whose kept rows were all silent, where an update that skips silent rows runs one placeholder row."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 3.2))
    for i, (arm, rs) in enumerate(rows.items()):
        steps, color = [r["step"] for r in rs], f"C{i}"
        ax.plot(steps, [r["rollout_s"] for r in rs], "o-", color=color, label=f"{arm}: rollout")
        ax.plot(steps, [r["update_s"] for r in rs], "s--", color=color, label=f"{arm}: update")
        silent = [r for r in rs if r.get("silent_rows") == r.get("kept_rows")]
        ax.plot([r["step"] for r in silent], [r["update_s"] for r in silent], "o", ms=13, mfc="none",
                color=color, label=f"{arm}: update, every kept row silent")
    ax.set_xlabel("step"); ax.set_ylabel("seconds"); ax.set_title("per-step phase times")
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0)); plt.tight_layout(); plt.show()


def plot_accuracy_intervals(evals: dict) -> None:
    """Lenient and strict accuracy against training seconds (evals: arm -> evaluation rows), each with
    its 95% Wilson interval."""
    import matplotlib.pyplot as plt

    from minipods.stats import wilson_interval

    fig, axes = plt.subplots(1, 2, figsize=(11, 3.6), sharey=True)
    for ax, (key, what) in zip(axes, (("eval_accuracy", "lenient"), ("eval_strict_accuracy", "strict"))):
        for arm, evs in evals.items():
            pts = [(r["elapsed_s"], round(r[key] * r["eval_n"]), r["eval_n"]) for r in evs if r.get(key) is not None]
            if not pts:
                continue
            ys, ci = [100 * k / n for _, k, n in pts], [wilson_interval(k, n) for _, k, n in pts]
            ax.errorbar([t for t, _, _ in pts], ys, yerr=[[y - 100 * lo for y, (lo, _) in zip(ys, ci)],
                                                         [100 * hi - y for y, (_, hi) in zip(ys, ci)]],
                        marker="o", capsize=3, label=arm)
        ax.set_title(f"{what} accuracy (95% Wilson intervals)"); ax.set_xlabel("training seconds"); ax.grid(alpha=0.3)
    axes[0].set_ylabel("test accuracy (%)")
    axes[1].legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0)); plt.tight_layout(); plt.show()


def plot_break_even(roll_t, upd_t, cm, ratios, here, here_range, l40s: dict, arms: dict, label: str) -> None:
    """Left: the cost model's two phases (each repeat faint, the fastest carrying the fitted lines).
    Right: the break-even gain T_PODS / T_GRPO against n/m: here (the model; the repeats' range), the
    L40S's curves (l40s: name -> curve) and the comparison's arms (arms: n_over_m, run, every, steps)."""
    import matplotlib.pyplot as plt
    import numpy as np

    reps = len(next(iter(roll_t.values())))
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(12, 3.9))
    for pts, mk, color, what in ((roll_t, "o", "tab:blue", "rollout (generated)"), (upd_t, "s", "tab:orange", "update (kept, all live)")):
        xs = list(pts)
        for i in range(reps):
            a1.plot(xs, [pts[k][i] for k in xs], mk, color=color, alpha=0.35, ms=4)
        a1.plot(xs, [min(pts[k]) for k in xs], mk, color=color, label=f"{what}: fastest of {reps}")
    grid = np.linspace(0, max(list(roll_t) + list(upd_t)), 50)
    a1.plot(grid, [cm.rollout(x) for x in grid], "-", color="tab:blue", alpha=0.6)
    a1.plot(grid, [cm.update(x) for x in grid], "-", color="tab:orange", alpha=0.6)
    a1.set_xlabel("sequences"); a1.set_ylabel("seconds"); a1.legend(fontsize=8); a1.set_title("the two phases, measured here")
    a2.plot(ratios, here, "o-", label=f"here: cost model ({label})")
    a2.fill_between(ratios, *here_range, color="tab:blue", alpha=0.15, lw=0, label="here: range over the repeats' fits")
    for (name, curve), style in zip(l40s.items(), ("s-", "^--", "v:")):
        a2.plot(ratios, curve, style, color="tab:red", label=f"L40S: {name}")
    a = arms
    a2.errorbar([a["n_over_m"]], [a["run"]], yerr=[[max(a["run"] - min(a["steps"]), 0)], [max(max(a["steps"]) - a["run"], 0)]],
                fmt="D", color="black", capsize=3, label="the arms as run (mean step ratio; range over steps)")
    a2.plot([a["n_over_m"]], [a["every"]], "D", mfc="none", color="black", ms=9, label="the arms, every kept row paid (estimate)")
    a2.set_xlabel("n / m"); a2.set_ylabel("break-even gain  T_PODS / T_GRPO"); a2.grid(alpha=0.3)
    a2.set_title("PODS pays above its curve"); a2.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    plt.tight_layout(); plt.show()
