"""When PODS pays: a cost model of one training step from measurements on the machine at hand.

PODS (paper, Section 3) generates n rollouts per prompt and updates on m < n. Both phases are close to
linear, rollout(k) = a_r + b_r k generated and update(k) = a_u + b_u k kept, so with P prompts
T_grpo = rollout(Pm) + update(Pm) (n = m) and T_pods = rollout(Pn) + update(Pm). If one PODS step is
worth `gain` GRPO steps, PODS reaches a target sooner iff gain > T_pods / T_grpo, and the extra
rollouts pay up to n_max = (gain T_grpo - update(Pm) - a_r) / (b_r P). The planner's lines: a
`python -m minipods.bench --parts costmodel` run (load_fit), else the authors' L40S runs (paper_l40s_model)."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from minipods.measure.common import fit_linear, fmt_s, fmt_x

PAPER_L40S = {"grpo_s": 7.5, "pods_s": 10.1, "n": 64, "m": 16}  # s per step, one L40S, Qwen2.5-3B (the paper, Sec. 5)
# s per step = fixed + rollout * n + update * m at 1 prompt per step: least squares over the 80 released runs
# of the eight max-variance GSM8K settings (minipods.analysis.paper_runs.fit_step_cost; tests re-fit it)
L40S_FIT = {"fixed_s": 4.415, "rollout_s": 0.05841, "update_s": 0.12264, "r2": 0.939, "runs": 80}


@dataclass
class Line:
    """seconds = a + b * x, fitted by least squares (r2: how well a line explains the points)."""
    a: float
    b: float
    r2: float = 1.0

    def __call__(self, x: float) -> float:
        return self.a + self.b * x


def fit_line(xs, ys) -> Line:
    slope, intercept, r2 = fit_linear(xs, ys)
    return Line(intercept, slope, r2)


@dataclass
class CostModel:
    rollout: Line  # seconds against sequences generated in one step
    update: Line  # seconds against sequences kept (trained on) in one step
    fixed: float = 0.0  # seconds per step in neither line (a fit over whole steps cannot split it between phases)

    def step_seconds(self, n: int, m: int, prompts: int = 1) -> dict:
        """Seconds per step of GRPO (n = m), GRPO on all n, and PODS (n -> m), with their parts."""
        if not 1 <= m <= n or prompts < 1:
            raise ValueError(f"need 1 <= m <= n and prompts >= 1, got n={n}, m={m}, prompts={prompts}")
        gm, gn, um, un, f = (self.rollout(prompts * m), self.rollout(prompts * n), self.update(prompts * m),
                             self.update(prompts * n), self.fixed)
        return {"grpo": f + gm + um, "grpo_all": f + gn + un, "pods": f + gn + um,
                "parts": {"rollout_m": gm, "rollout_n": gn, "update_m": um, "update_n": un}}

    def break_even(self, n: int, m: int, prompts: int = 1, gain: float | None = None) -> dict:
        """break_even_gain (= T_pods / T_grpo); with `gain`: pays, speedup, n_max (largest n that still pays)."""
        t = self.step_seconds(n, m, prompts)
        out = break_even(t["pods"], t["grpo"], gain)
        if gain is not None:  # a fitted slope <= 0 (noise, tiny sizes): extra rollouts cost nothing measurable
            out["n_max"] = ((gain * t["grpo"] - self.fixed - t["parts"]["update_m"] - self.rollout.a) / (self.rollout.b * prompts)
                            if self.rollout.b > 0 else float("inf"))
        return out


def break_even(pods_s: float, grpo_s: float, gain: float | None = None) -> dict:
    """PODS pays iff gain (GRPO steps one PODS step is worth) > pods_s / grpo_s."""
    if pods_s <= 0 or grpo_s <= 0:
        raise ValueError("step times must be positive")
    out = {"pods_s": pods_s, "grpo_s": grpo_s, "break_even_gain": pods_s / grpo_s}
    if gain is not None:
        out.update(gain=gain, speedup=gain * grpo_s / pods_s, pays=gain > pods_s / grpo_s)
    return out


def paper_l40s(gain: float | None = None) -> dict:
    """The same arithmetic on the paper's L40S step times."""
    return {**break_even(PAPER_L40S["pods_s"], PAPER_L40S["grpo_s"], gain), "n": PAPER_L40S["n"], "m": PAPER_L40S["m"]}


def paper_l40s_model() -> CostModel:
    """The L40S lines of L40S_FIT. The fixed ~4.4 s is its own term: step counts cannot split it between
    the phases, nor say whether it grows with prompts per step (the runs have 1)."""
    f = L40S_FIT
    return CostModel(Line(0.0, f["rollout_s"]), Line(0.0, f["update_s"]), f["fixed_s"])


def load_fit(path) -> CostModel:
    """The fitted lines of a `python -m minipods.bench --parts costmodel --output FILE` run (or any JSON
    with {"rollout_fit": {"a", "b"}, "update_fit": {"a", "b"}} at its top or under parts.costmodel)."""
    import json
    from pathlib import Path
    d = json.loads(Path(path).read_text())
    d = d.get("parts", {}).get("costmodel", d)
    try:
        lines = [Line(float(d[k]["a"]), float(d[k]["b"]), float(d[k].get("r2", 1.0))) for k in ("rollout_fit", "update_fit")]
    except (KeyError, TypeError, ValueError):
        raise ValueError(f"{path}: no rollout_fit/update_fit lines (write them with python -m minipods.bench "
                         "--parts costmodel --output FILE)") from None
    return CostModel(*lines)


def implied_gain(speedup: float, pods_s: float, grpo_s: float) -> float:
    """The per-step gain a wall-clock speed-up implies: speedup * T_pods / T_grpo (e.g. the paper's ~2x)."""
    return speedup * pods_s / grpo_s


def part_costmodel(ctx, cfg) -> dict:
    """Lines through rollout seconds at n/4, n/2, n and update seconds at --m-values; n priced against n/4."""
    from minipods.fast.rollouts import generate_rollouts
    from minipods.measure.phases import update_points
    n = cfg.n
    generate_rollouts(ctx.model, ctx.tok, [ctx.prompt], 2, max_new_tokens=4, batch_size=2)  # warm-up
    gen = []
    for k in sorted({max(1, n // 4), max(1, n // 2), n}):
        torch.manual_seed(cfg.seed)
        ro = generate_rollouts(ctx.model, ctx.tok, [ctx.prompt], k, max_new_tokens=cfg.max_new_tokens, batch_size=k)
        gen.append({"sequences": k, "seconds": ro.seconds, "tokens": ro.num_tokens})
    if ctx.rollouts is None:  # the last set has n rows: the update's fixed set
        ctx.rollouts = ro
    points = ctx.update_points or update_points(ctx, cfg, repeats=1, memory=False)  # the update part's, if it ran
    upd = [{"sequences": p["m"], "seconds": p["seconds"]} for p in points]
    model = CostModel(fit_line([g["sequences"] for g in gen], [g["seconds"] for g in gen]),
                      fit_line([u["sequences"] for u in upd], [u["seconds"] for u in upd]))
    m = max(1, n // 4)
    return {"rollout_points": gen, "update_points": upd, "rollout_fit": vars(model.rollout),
            "update_fit": vars(model.update), "n": n, "m": m, "step": model.step_seconds(n, m),
            "here": model.break_even(n, m), "paper": paper_l40s(implied_gain(2.0, PAPER_L40S["pods_s"],
                                                                              PAPER_L40S["grpo_s"]))}


def rows_costmodel(r: dict) -> list[list[str]]:
    rf, uf, s, n, m = r["rollout_fit"], r["update_fit"], r["step"], r["n"], r["m"]
    rows = [["costmodel", f"rollout: {g['sequences']} sequences", fmt_s(g["seconds"])] for g in r["rollout_points"]]
    rows += [["costmodel", f"update: {u['sequences']} kept", fmt_s(u["seconds"])] for u in r["update_points"]]
    rows += [["costmodel", "fit: rollout s = a + b * generated",
              f"a={rf['a']:.2f} s, b={rf['b']:.3f} s/seq (R²={rf['r2']:.3f})"],
             ["costmodel", "fit: update s = a + b * kept", f"a={uf['a']:.2f} s, b={uf['b']:.3f} s/seq (R²={uf['r2']:.3f})"],
             ["costmodel", f"s/step here: GRPO n=m={m} | GRPO all n={n} | PODS {n}->{m}",
              f"{fmt_s(s['grpo'])} | {fmt_s(s['grpo_all'])} | {fmt_s(s['pods'])}"],
             ["costmodel", "here: PODS pays iff gain per step >", fmt_x(r["here"]["break_even_gain"])]]
    p = r["paper"]
    rows.append(["costmodel", f"paper L40S: GRPO {p['grpo_s']} s, PODS {p['n']}->{p['m']} {p['pods_s']} s per step",
                 f"pays iff gain > {fmt_x(p['break_even_gain'])}; its ~2x speed-up implies gain {p['gain']:.2f}"])
    return rows
