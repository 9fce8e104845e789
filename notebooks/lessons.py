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

# ---------------------------------------------------------------- 05 PODS vs GRPO
# Notebook 05 reads two finished arms (GRPO and PODS) from their metrics rows. `rows` is arm ->
# training rows (minipods.analysis.results.training_rows), `cfgs` arm -> config.json.

def seconds_spread(xs) -> str:
    """'median [min-max]' of a list of seconds."""
    import numpy as np

    return f"{np.median(xs):6.2f} [{min(xs):.2f}-{max(xs):.2f}]"


def plot_phase_times(rows: dict, cfgs: dict):
    """Each arm's rollout and update seconds per step; a ring marks a step whose kept rows were all silent
    (advantage 0), where an update that skips silent rows runs one placeholder row."""
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


def rows_paid(r: dict, pricing: str) -> int:
    """Rows a step's update processes under `pricing`: "every_row" every kept row, "skip_silent" the kept
    rows whose advantage is not 0 (minipods.fast.update; 0 when all are silent: one placeholder row runs)."""
    return r["kept_rows"] - r["silent_rows"] if pricing == "skip_silent" else r["kept_rows"]


def update_costs(rs: list[dict], ran: str) -> dict:
    """One arm's update seconds per step as run (`ran`: its config's update pricing) and under both
    pricings, from its own metrics rows: per_row = its update seconds / the rows it processed (a
    placeholder row counted as one), the rule of minipods.analysis.results.repriced_seconds (a step of
    the other pricing: its seconds scaled by the rows that pricing processes; an all-silent step at
    per_row). Means per step: rollout, update, step, kept, silent and processed rows, and
    `update_every` / `update_skip` (update s under each pricing) with `step_every` / `step_skip`."""
    import numpy as np

    done = [rows_paid(r, ran) for r in rs]
    per_row = sum(r["update_s"] for r in rs) / max(sum(max(d, 1) for d in done), 1)
    priced = {}
    for to in ("every_row", "skip_silent"):
        priced[to] = [r["update_s"] if to == ran else
                      (r["update_s"] * max(rows_paid(r, to), 1) / d if d else per_row * max(rows_paid(r, to), 1))
                      for r, d in zip(rs, done)]
    mean = lambda xs: float(np.mean(xs))
    out = {"ran": ran, "steps": len(rs), "per_row": per_row, "kept": mean([r["kept_rows"] for r in rs]),
           "silent": mean([r["silent_rows"] for r in rs]), "processed": mean([max(d, 1) for d in done]),
           "all_silent_steps": sum(r["silent_rows"] == r["kept_rows"] for r in rs),
           "rollout": mean([r["rollout_s"] for r in rs]), "update": mean([r["update_s"] for r in rs]),
           "update_median": float(np.median([r["update_s"] for r in rs])), "step": mean([r["step_s"] for r in rs]),
           "completion_len": mean([r["completion_len_mean"] for r in rs])}
    for to, key in (("every_row", "every"), ("skip_silent", "skip")):
        out[f"update_{key}"] = mean(priced[to])
        out[f"step_{key}"] = out["rollout"] + out[f"update_{key}"]
    return out


def eval_right(r: dict, key: str):
    """(right, questions) of an evaluation row; None when the run predates the key."""
    return None if r.get(key) is None else (round(r[key] * r["eval_n"]), r["eval_n"])


def fmt_eval(c) -> str:
    """'right/questions [95% Wilson interval]'."""
    from minipods.analysis.stats import wilson_interval

    if c is None:
        return "      -       "
    lo, hi = wilson_interval(*c)
    return f"{c[0]:2d}/{c[1]} [{lo:.2f}, {hi:.2f}]"


def print_evaluations(evals: dict) -> None:
    """Each arm's evaluations: lenient and strict accuracy with intervals, format rate."""
    for arm, evs in evals.items():
        for r in evs:
            print(f"{arm:18s} step {r['step']:2d} at {r['elapsed_s']:6.1f} s | lenient {fmt_eval(eval_right(r, 'eval_accuracy'))}"
                  f" | strict {fmt_eval(eval_right(r, 'eval_strict_accuracy'))} | format rate "
                  f"{r.get('eval_format_rate', float('nan')):.2f}")
            s_ = eval_right(r, "eval_strict_accuracy")
            assert s_ is None or s_[0] <= eval_right(r, "eval_accuracy")[0]  # a strict answer is also a lenient one


def paired_finals(run_a, run_b) -> dict:
    """'lenient'/'strict' -> minipods.analysis.stats.paired_difference of two runs' last evaluations on
    their common questions (b minus a); a kind is missing when the runs did not record it."""
    from minipods.analysis import results
    from minipods.analysis.stats import paired_difference

    out = {}
    for key, what in (("correct", "lenient"), ("strict", "strict")):
        a, b = ({q["index"]: int(q[key]) for q in results.final_eval(d) if key in q} for d in (run_a, run_b))
        common = sorted(set(a) & set(b))
        if common:
            out[what] = paired_difference([a[i] for i in common], [b[i] for i in common])
    return out


def paired_verdict(p: dict, what: str) -> str:
    """One sentence on a paired difference (PODS minus GRPO): ahead, behind, or no difference shown."""
    lo, hi = p["ci95"]
    p_val = f", McNemar p = {p['p']:.2f}" if p.get("p") is not None else ""
    ci = f"{100 * p['diff']:+.1f} points, 95% CI [{100 * lo:+.1f}, {100 * hi:+.1f}]{p_val}, {p['n']} questions"
    if lo > 0:
        return f"{what}: PODS ahead of GRPO at the final evaluation ({ci})"
    if hi < 0:
        return f"{what}: GRPO ahead of PODS at the final evaluation ({ci})"
    return f"{what}: no difference shown ({ci}: the interval includes 0)"


def plot_accuracy_intervals(evals: dict) -> None:
    """Lenient and strict accuracy against training seconds, each evaluation with its 95% Wilson interval."""
    import matplotlib.pyplot as plt
    from minipods.analysis.stats import wilson_interval

    fig, axes = plt.subplots(1, 2, figsize=(11, 3.6), sharey=True)
    for ax, (key, what) in zip(axes, (("eval_accuracy", "lenient"), ("eval_strict_accuracy", "strict"))):
        for arm, evs in evals.items():
            pts = [(r["elapsed_s"], eval_right(r, key)) for r in evs if eval_right(r, key)]
            if not pts:
                continue
            xs, ys = [t for t, _ in pts], [100 * k / n for _, (k, n) in pts]
            ci = [wilson_interval(*c) for _, c in pts]
            ax.errorbar(xs, ys, yerr=[[y - 100 * lo for y, (lo, _) in zip(ys, ci)],
                                      [100 * hi - y for y, (_, hi) in zip(ys, ci)]], marker="o", capsize=3, label=arm)
        ax.set_title(f"{what} accuracy (95% Wilson intervals)"); ax.set_xlabel("training seconds"); ax.grid(alpha=0.3)
    axes[0].set_ylabel("test accuracy (%)")
    axes[1].legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0)); plt.tight_layout(); plt.show()


def paper_metric_verdict(time: dict | None, base: str, focus: str, label: str = "as run") -> str:
    """The paper's metric in words, from minipods.analysis.summary.time_to_target of one seed: which arm
    reached `base`'s plateau (the target) sooner in training seconds, or why this run cannot say."""
    if time is None:
        return f"{label}: no baseline arm, so no target"
    (seed, tt), = time["targets"].items()
    if tt is None:
        return (f"{label}: no verdict: `{base}`'s untrained model (its step-0 evaluation) already meets `{base}`'s "
                "own plateau, so this run cannot say which arm is sooner")
    g, p = (time["arms"][a]["per_seed"][seed] for a in (base, focus))
    head = f"{label}: target {100 * tt[0]:.1f}% (±{100 * tt[1]:.1f}); `{base}` reached it at {g['seconds']:.1f} s (step {g['step']}), "
    if p["seconds"] is None:
        return head + (f"`{focus}` never did in its {p['end_s']:.1f} s ({p['end_step']} steps): GRPO won "
                       f"(speed-up at most {g['seconds'] / p['end_s']:.2f}x)")
    sp = g["seconds"] / p["seconds"] if p["seconds"] else float("inf")
    who = "PODS won" if sp > 1 else ("GRPO won" if sp < 1 else "a tie")
    return head + f"`{focus}` at {p['seconds']:.1f} s (step {p['step']}): speed-up {sp:.2f}x, {who}"


def costmodel_timings(cm_runs: list[dict], key: str) -> dict:
    """{sequences: [seconds of each repeat]} of the cost model's rollout or update points."""
    pts = {}
    for res in cm_runs:
        for pt in res[key]:
            pts.setdefault(pt["sequences"], []).append(pt["seconds"])
    return pts


def plot_break_even(roll_t, upd_t, cm, ratios, here_curve, here_curves, paper_curve, paper, paper_gain,
                    n_over_m, arms_point, arms_every, step_ratios, label):
    """Left: the cost model's two phases (each repeat faint, the fastest carrying the fit, the lines).
    Right: the break-even gain against n/m, here (the model, the repeats' range) and on the paper's L40S,
    with the comparison's arms: as run (black diamond, the range of its step-by-step ratios) and priced as
    the model prices them, every kept row paying (hollow diamond)."""
    import matplotlib.pyplot as plt
    import numpy as np

    reps = len(next(iter(roll_t.values())))
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(12, 3.9))
    gx, ux = list(roll_t), list(upd_t)
    for i in range(reps):
        a1.plot(gx, [roll_t[k][i] for k in gx], "o", color="tab:blue", alpha=0.35, ms=4)
        a1.plot(ux, [upd_t[k][i] for k in ux], "s", color="tab:orange", alpha=0.35, ms=4)
    a1.plot(gx, [min(roll_t[k]) for k in gx], "o", color="tab:blue", label=f"rollout (generated): fastest of {reps}")
    a1.plot(ux, [min(upd_t[k]) for k in ux], "s", color="tab:orange", label=f"update (kept, all live): fastest of {reps}")
    xs = np.linspace(0, max(gx + ux), 50)
    a1.plot(xs, [cm.rollout(x) for x in xs], "-", color="tab:blue", alpha=0.6)
    a1.plot(xs, [cm.update(x) for x in xs], "-", color="tab:orange", alpha=0.6)
    a1.set_xlabel("sequences"); a1.set_ylabel("seconds"); a1.legend(fontsize=8); a1.set_title("the two phases, measured here")
    a2.plot(ratios, here_curve, "o-", label=f"here: cost model ({label})")
    a2.fill_between(ratios, np.min(here_curves, axis=0), np.max(here_curves, axis=0), color="tab:blue", alpha=0.15,
                    lw=0, label="here: range over the repeats' usable fits")
    a2.plot(ratios, paper_curve, "s-", color="tab:red", label="paper L40S: line from its two step times")
    a2.plot([paper["n"] / paper["m"]], [paper["break_even_gain"]], "*", ms=14, color="tab:red",
            label=f"paper: {paper['pods_s']} s / {paper['grpo_s']} s")
    a2.errorbar([n_over_m], [arms_point], yerr=[[max(arms_point - min(step_ratios), 0)], [max(max(step_ratios) - arms_point, 0)]],
                fmt="D", color="black", capsize=3, label="the arms as run (mean step ratio; range over steps)")
    a2.plot([n_over_m], [arms_every], "D", mfc="none", color="black", ms=9, label="the arms, every kept row paid (estimate)")
    a2.axhline(paper_gain, color="tab:red", ls=":", label=f"gain implied by the paper's 2x ({paper_gain:.2f})")
    a2.set_xlabel("n / m"); a2.set_ylabel("break-even gain  T_PODS / T_GRPO"); a2.grid(alpha=0.3)
    a2.set_title("PODS pays above its curve"); a2.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    plt.tight_layout(); plt.show()


def silent_groups(rs: list[dict], cfg: dict) -> dict:
    """One arm's silent (zero-std) groups from its metrics rows: k of total groups, fraction, 95% Wilson
    interval, mean pass rate p, the binary prediction p^n + (1-p)^n with each step's fraction of correct
    rollouts as every prompt's pass rate (pred), and the steps where the format bonus fired."""
    import numpy as np
    from minipods.analysis.gradients import predicted_silent_fraction
    from minipods.analysis.stats import wilson_interval

    n, P = cfg["n"], cfg["prompts_per_step"]
    per_step = [round(r["zero_std_frac"] * P) for r in rs]  # silent groups in each step
    assert all(abs(k - r["zero_std_frac"] * P) < 1e-6 for k, r in zip(per_step, rs))
    k, total = sum(per_step), len(rs) * P
    pred = float(np.mean([predicted_silent_fraction([r["correct_frac"]], n) for r in rs]))
    return dict(k=k, total=total, frac=k / total, ci=wilson_interval(k, total), pred=pred, n=n,
                p=float(np.mean([r["correct_frac"] for r in rs])),
                fmt_steps=sum(r.get("format_reward_mean", 0) > 0 for r in rs))


def silent_verdict(sg: dict, sp: dict) -> str:
    """GRPO's (sg) and PODS's (sp) silent fractions compared, whole: the order, whether chance can tell
    them apart (their Wilson intervals), what p^n + (1-p)^n says at GRPO's pass rate, observed minus predicted."""
    from minipods.analysis.gradients import predicted_silent_fraction

    same_p = [predicted_silent_fraction([sg["p"]], k) for k in (sg["n"], sp["n"])]
    assert same_p[1] <= same_p[0] + 1e-12  # at one pass rate, a larger group is silent less often
    overlap = sp["ci"][0] <= sg["ci"][1] and sg["ci"][0] <= sp["ci"][1]
    order = "higher than" if sp["frac"] > sg["frac"] else ("lower than" if sp["frac"] < sg["frac"] else "equal to")
    return (f"PODS's silent fraction ({sp['k']}/{sp['total']}) is {order} GRPO's ({sg['k']}/{sg['total']}); "
            + ("the two intervals overlap, so this run cannot tell them apart" if overlap else "the intervals do not overlap")
            + f". At GRPO's mean pass rate {sg['p']:.3f} a group of {sp['n']} would be silent {same_p[1]:.2f} of the "
            f"time vs {same_p[0]:.2f} for a group of {sg['n']}; observed minus predicted: GRPO {sg['frac'] - sg['pred']:+.2f}, "
            f"PODS {sp['frac'] - sp['pred']:+.2f} (positive: pass rates that differ between prompts raise it; negative: "
            "the format bonus split groups, or chance with this few groups)")


def break_even_curve(cm, ratios, m: int, prompts: int):
    """The cost model's break-even gain T_PODS / T_GRPO at n = r m for each r in ratios; None when one of
    its step times is not positive (a repeat's fit thrown off by a disturbed timing, e.g. a negative
    intercept on the tiny model's millisecond timings)."""
    try:
        return [cm.break_even(int(r * m), m, prompts=prompts)["break_even_gain"] for r in ratios]
    except ValueError:
        return None


def pays_sentence(here: dict, gain: float, timed_max: int, m: int) -> str:
    """What the cost model says of PODS at n/m = 4 with the per-step gain the paper's ~2x implies, every
    assumption named: that gain is the paper's (not measured here), and n_max extrapolates it and the
    rollout line to every larger n."""
    head = (f"if one PODS step here were worth the {gain:.2f} GRPO steps the paper's ~2x implies at its n/m = 4 "
            "(an assumption: this run measured no such gain), PODS at n/m = 4 ")
    if not here["pays"]:
        return head + "would not pay here by the model"
    limit = (f"up to n = {here['n_max']:.0f} at m = {m}" if here["n_max"] != float("inf") else
             "at any n (the fitted rollout slope is not positive: no cost of extra rollouts was measurable)")
    return head + (f"would pay by the model (speed-up {here['speedup']:.2f}x); if that gain also held at every larger "
                   f"n and the rollout line stayed straight past the {timed_max} sequences timed, the extra rollouts "
                   f"would pay {limit}")


def peak_verdict(evals: dict, base: str, focus: str) -> str:
    """The paper's definition read literally on one run: the target is `base`'s peak (its best evaluation,
    no tolerance); each arm's time is its first evaluation at or above it (training seconds); GRPO's time /
    PODS's is the speed-up. evals: arm -> its evaluation rows (eval_accuracy, elapsed_s, step)."""
    peak = max(r["eval_accuracy"] for r in evals[base])
    hit = {a: next((r for r in evals[a] if r["eval_accuracy"] >= peak - 1e-12), None) for a in (base, focus)}
    right = round(peak * evals[base][-1]["eval_n"])
    head = f"`{base}`'s peak {right}/{evals[base][-1]['eval_n']}"
    if hit[base]["step"] == 0:
        return head + " is its untrained model's (step 0): no target, no verdict"
    g, p = hit[base], hit[focus]
    head += f", reached at {g['elapsed_s']:.1f} s (step {g['step']}); "
    if p is None:
        best = max(r["eval_accuracy"] for r in evals[focus])
        return head + (f"`{focus}` never reached it (its best {round(best * evals[focus][-1]['eval_n'])}/"
                       f"{evals[focus][-1]['eval_n']} in its {evals[focus][-1]['elapsed_s']:.1f} s): GRPO won")
    sp = g["elapsed_s"] / p["elapsed_s"] if p["elapsed_s"] else float("inf")
    return head + (f"`{focus}` at {p['elapsed_s']:.1f} s (step {p['step']}): speed-up {sp:.2f}x, "
                   + ("PODS won" if sp > 1 else "GRPO won" if sp < 1 else "a tie"))
