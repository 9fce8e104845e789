"""GRPO vs. GRPO-PODS under the same seed, data order and budget: `python -m minipods.compare`.

Paper (Xu et al., TMLR 2026, Figure 1, Section 5): at the same wall-clock budget GRPO-PODS (generate n = 64,
update on the m = 16 of maximum reward variance) reaches vanilla GRPO's (n = m = 16) peak test accuracy
about 2x sooner: generating rollouts is cheap and parallel, the update is bound by the rows it trains on.

    python -m minipods.compare --small --output-dir runs/cmp              # the laptop design, one seed
    python -m minipods.compare --preset laptop --seeds 0,1,2,3,4,5,6,7,8,9   # the planned study (docs/results.md)
    python -m minipods.compare --preset class --seed S --output-dir DIR   # one student's seed (docs/class_study.md)
    python -m minipods.compare --merge DIR... --output-dir OUT            # their folders as one study
    python -m minipods.compare --audit DIR [--steps K]                    # re-run a hand-in's first K steps

Each arm is a `minipods.train` run in OUTPUT_DIR/ARM (OUTPUT_DIR/seed{s}/ARM with --seeds) from a fresh
model and the same seed (the same questions in the same order); a finished arm (DONE marker) is skipped on
a re-run, an interrupted one resumes; DONE records the machine (merge checks that a seed's arms share
one). Figures, summary and statistics: docs/training.md."""

from __future__ import annotations

import dataclasses
import gc
import hashlib
import json
import platform
import sys
import time
from pathlib import Path
from typing import Callable

from minipods import cli
from minipods import train as train_mod
from minipods.analysis import merge, plots, results
from minipods.checkpoint import RunLock, prepare_output_dir, write_atomic
from minipods.measure.memory import reset_peak
from minipods.model import DEFAULT_MODEL, resolve_model
from minipods.train import PRESETS, TrainConfig, make_config

ARMS: dict[str, dict] = {  # arm name -> the settings that define it (the rest is shared by all arms)
    "grpo": dict(method="grpo"),  # vanilla GRPO: update on all rollouts, n = m
    "grpo_same_n": dict(method="grpo"),  # n = m = PODS's n: the update PODS avoids
    "pods_max_variance": dict(method="pods", rule="max_variance"),  # the paper's PODS
    "pods_random": dict(method="pods", rule="random"),
    "pods_max_reward": dict(method="pods", rule="max_reward"),
}
DEFAULT_ARMS = ("grpo", "pods_max_variance")
LAPTOP_ARMS = ("grpo", "pods_max_variance", "pods_random")  # --small: PODS, GRPO with its m, random ablation
SMALL_ARMS = ("grpo", "grpo_same_n", "pods_max_variance", "pods_random")  # --preset small: both GRPOs, both rules
PRESET_ARMS = {"laptop": LAPTOP_ARMS, "small": SMALL_ARMS}
DONE = results.DONE  # marker file in a finished arm's folder
AUDIT_STEPS = 3  # --audit re-runs this many steps of each arm (--preset class: about a minute on 2 cores)
PRIMARY = {"class": "time_averaged"}  # the statistic a preset's study fixed before its seeds ran
SMALL_EVAL_EVERY = 8  # --preset small: evaluate at steps 0, 8, 16, 24 and 32 (five points of a curve per arm)
SMALL_PRESET = "laptop"  # what --small runs: the classroom version of the planned study (docs/results.md)
UNBOUNDED_STEPS = 1_000_000  # --budget-s without --max-steps: the budget is the only limit
_NOT_COMPARED = {"resume", "progress", "output_dir", "device"}  # may differ in a re-run: same results
_PER_ARM = ("method", "rule", "output_dir", "resume")  # TrainConfig fields compare sets itself


def _shared_overrides(preset: str | None, base: dict, overrides: dict) -> dict:
    """The settings every arm shares: the overrides, --budget-s alone lifting max_steps, a few evaluations (a curve)."""
    ov = {k: v for k, v in overrides.items() if v is not None}
    if per_arm := [k for k in _PER_ARM if k in ov]:
        raise ValueError(f"{per_arm[0]} is set per arm by minipods.compare, not as an override")
    if ov.get("budget_s") and "max_steps" not in ov:
        ov["max_steps"] = UNBOUNDED_STEPS
    if "eval_every" not in ov and not ov.get("eval_every_s", base.get("eval_every_s")):  # no time grid given
        if preset == "small" or not base.get("eval_every", 0):
            steps = ov.get("max_steps", base.get("max_steps", TrainConfig.max_steps))
            ov["eval_every"] = SMALL_EVAL_EVERY if steps >= UNBOUNDED_STEPS or preset == "small" \
                else max(1, steps // 4)
    return ov


def arm_configs(arms=None, preset: str | None = None, output_dir: str | Path = "runs/compare",
                **overrides) -> dict[str, TrainConfig]:
    """Arm name -> its validated TrainConfig. arms: names of ARMS (a list or "a,b"; None: the preset's).
    GRPO arms use n = m = the shared m, grpo_same_n n = m = the shared n, PODS arms the shared n and m."""
    if preset is not None and preset not in PRESETS:
        raise ValueError(f"unknown preset {preset!r}; expected one of {sorted(PRESETS)}")
    base = PRESETS[preset] if preset else {}
    ov, out = _shared_overrides(preset, base, overrides), Path(output_dir)
    names = arms if arms is not None else PRESET_ARMS.get(preset, DEFAULT_ARMS)
    names = [a.strip() for a in (names.split(",") if isinstance(names, str) else names) if a.strip()]
    if unknown := [a for a in names if a not in ARMS]:
        raise ValueError(f"unknown arm(s) {', '.join(unknown)}; expected some of {', '.join(ARMS)}")
    if len(set(names)) != len(names):
        raise ValueError(f"--arms lists an arm twice: {','.join(names)}")
    cfgs: dict[str, TrainConfig] = {}
    def make(name, **kw):  # make_config validates; say which arm a bad setting breaks
        try:
            return make_config(preset, **kw, output_dir=str(out / name))
        except ValueError as e:
            raise ValueError(f"arm {name}: {e}") from None
    pods_n = ov.get("n", base.get("n", TrainConfig.n))
    for name in names:
        arm_ov = dict(ov)
        if name == "grpo_same_n":
            arm_ov["n"] = arm_ov["m"] = pods_n  # n = m = the n PODS generates
        elif ARMS[name]["method"] == "grpo":
            arm_ov.pop("n", None)  # n = m: make_config takes the (shared) m
        cfgs[name] = make(name, **arm_ov, **ARMS[name])
    if not cfgs:
        raise ValueError("nothing to run: give --arms")
    return cfgs


def arm_status(cfg: TrainConfig) -> str:
    d = Path(cfg.output_dir)
    return "done" if (d / DONE).is_file() else "resume" if any(
        (d / name).exists() for name in ("checkpoint", "checkpoint.old", "metrics.jsonl")) else "new"


def parse_seeds(spec: str | list[int]) -> list[int]:
    """'0,1,2' -> [0, 1, 2] (distinct, in the given order)."""
    try:
        seeds = [int(x) for x in spec.split(",") if x.strip()] if isinstance(spec, str) else [int(x) for x in spec]
    except ValueError:
        raise ValueError(f"--seeds must be comma-separated integers, got {spec!r}") from None
    if not seeds or len(set(seeds)) != len(seeds) or min(seeds) < 0:
        raise ValueError(f"--seeds needs distinct non-negative integers, got {spec!r}")
    return seeds


def run_comparison(output_dir: str | Path = "runs/compare", arms=None, preset: str | None = None,
                   model_factory: Callable[[TrainConfig], tuple] | None = None, log: Callable = print,
                   seeds: list[int] | str | None = None, **overrides) -> Path:
    """Run (or resume) every arm (once per seed with `seeds`), then write the figures and summary into
    `output_dir`. model_factory(cfg) -> (model, tokenizer), once per arm (default: the arm loads
    cfg.model); overrides: TrainConfig fields shared by all arms."""
    seeds, out = (parse_seeds(seeds) if seeds is not None else None), Path(output_dir)
    if seeds is not None and overrides.get("seed") is not None:
        raise ValueError("give either --seed or --seeds, not both")
    # seed (None: one comparison, arms in OUTPUT_DIR/ARM) -> arm -> config; seed s: OUTPUT_DIR/seed{s}/ARM
    per_seed = {None: arm_configs(arms, preset, out, **overrides)} if seeds is None else \
        {s: arm_configs(arms, preset, out / f"seed{s}", **overrides, seed=s) for s in seeds}
    # refuse before any work if a saved arm ran with other settings, or the model is not there
    for cfg in (c for cfgs in per_seed.values() for c in cfgs.values()):
        saved = results.read_config(cfg.output_dir)
        diff = [k for k, v in dataclasses.asdict(cfg).items() if k not in _NOT_COMPARED and k in saved
                and saved[k] != v] if arm_status(cfg) != "new" else []
        if diff:
            raise ValueError(f"{cfg.output_dir} holds a run with different settings ({', '.join(diff)}); "
                             "use another --output-dir (or delete that arm's folder)")
    model = next(iter(next(iter(per_seed.values())).values())).model
    if model_factory is None and model != DEFAULT_MODEL:  # each arm loads it; a missing path fails here
        resolve_model(model)
    prepare_output_dir(out)
    with RunLock(out):  # one comparison process per folder (each arm also locks its own folder)
        if seeds is None:
            return _run_arms(out, per_seed[None], preset, model_factory, log, overrides)
        meta = {"seeds": seeds, **_meta(per_seed[seeds[0]], preset, overrides)}
        write_atomic(out / results.COMPARISON_FILE, json.dumps(meta, indent=1))
        for s in seeds:
            log(f"== seed {s} ==")
            prepare_output_dir(out / f"seed{s}")
            _run_arms(out / f"seed{s}", per_seed[s], preset, model_factory, log, {**overrides, "seed": s})
        for p in plots.make(results.seed_dirs(out, meta), out, meta).values():
            log(f"wrote {p}")
        return out


def machine_record(cfg: TrainConfig) -> dict:
    """What a finished arm records of its machine: CPU, threads, a hash of the host name and, for a
    time-budgeted arm, the CPU's probe at its start (matmul and memory speed: what the budget buys)."""
    import torch

    from minipods.measure.speed import machine_limits
    lim = machine_limits() if cfg.budget_s else {}
    return {"cpu": cpu_name(), "threads": torch.get_num_threads(), "host": hashlib.sha256(platform.node().encode()).hexdigest()[:8],
            **({"probe": {k: round(lim[k], 4) for k in ("fp32_tflops", "mem_gbs")}} if lim else {})}


def cpu_name() -> str:
    """The CPU's model name, then its family and model numbers (a VM may show only "AMD EPYC"): a finished arm
    records it (wall-clock budgets and floating-point rounding differ by machine; --audit compares it)."""
    try:
        info = {k.strip(): v.strip() for k, v in (l.split(":", 1) for l in open("/proc/cpuinfo").read().split("\n\n")[0].splitlines() if ":" in l)}
        return info["model name"] + (f" (family {info['cpu family']}, model {info['model']})" if "cpu family" in info else "")
    except (OSError, KeyError):
        return platform.processor() or platform.machine()


def _meta(cfgs: dict[str, TrainConfig], preset, overrides) -> dict:
    """What comparison.json records of a set of arms (the plots read it back)."""
    return {"arms": list(cfgs), "baseline": plots.BASELINE if "grpo" in cfgs else None, "preset": preset,
            "overrides": {k: v for k, v in overrides.items() if v is not None},
            **({"primary": PRIMARY[preset]} if preset in PRIMARY else {})}


def _run_arms(out: Path, cfgs: dict[str, TrainConfig], preset, model_factory, log, overrides) -> Path:
    first = next(iter(cfgs.values()))  # the arms of one run share its seed and budget
    meta = {**_meta(cfgs, preset, overrides), "budget_s": first.budget_s}
    write_atomic(out / results.COMPARISON_FILE, json.dumps(meta, indent=1))
    for i, (name, cfg) in enumerate(cfgs.items(), 1):
        status = arm_status(cfg)
        head = f"[{i}/{len(cfgs)}] {name}: {cfg.method} n={cfg.n} m={cfg.m}" + \
               (f" rule={cfg.rule}" if cfg.method == "pods" else "")
        if status == "done":
            log(f"{head}: finished earlier ({Path(cfg.output_dir) / DONE}), skipped")
            continue
        log(f"{head}: {'resuming' if status == 'resume' else 'starting'} in {cfg.output_dir}")
        cfg = dataclasses.replace(cfg, resume=status == "resume")
        model, tok = model_factory(cfg) if model_factory is not None else (None, None)
        mach = machine_record(cfg)
        reset_peak(cfg.device)  # each arm's peak_mem_mb counts from its own start
        t0 = time.perf_counter()
        train_mod.train(cfg, model, tok)
        last = max(results.training_rows(results.read_rows(cfg.output_dir)), key=lambda r: r["step"], default={})
        write_atomic(Path(cfg.output_dir) / DONE, json.dumps(  # a kill before this: the arm resumes (no-op)
            {"step": last.get("step", 0), "elapsed_s": last.get("elapsed_s", 0.0),
             "wall_s_this_call": time.perf_counter() - t0, **mach}) + "\n")
        del model, tok
        gc.collect()
    meta["fingerprint"] = results.fingerprint({a: results.read_config(c.output_dir) for a, c in cfgs.items()})
    write_atomic(out / results.COMPARISON_FILE, json.dumps(meta, indent=1))
    for p in plots.make({first.seed: {a: Path(c.output_dir) for a, c in cfgs.items()}}, out, meta).values():
        log(f"wrote {p}")
    return out


def audit(handin: str | Path, steps: int = AUDIT_STEPS, model_factory: Callable | None = None, log: Callable = print) -> bool:
    """Re-run the first `steps` steps of each arm of a checked hand-in from its own config.json (no evaluation) and
    compare the rows: every value but timings and memory where DONE's CPU model and threads are this machine's, else
    only the kept indices and rewards (another CPU rounds differently). True when they match."""
    import tempfile

    import torch
    ok = True
    for d in (d for f in merge.seed_folders([handin]) for d in merge.check_seed(f)["dirs"].values()):
        done, fields = results.read_done(d), {f.name for f in dataclasses.fields(TrainConfig)}
        same = (done.get("cpu"), done.get("threads")) == (cpu_name(), torch.get_num_threads())
        keep = (lambda k: not k.endswith("_s") and k[:5] != "eval_" and k != "peak_mem_mb") if same else ("step", "kept_idx", "reward_mean").__contains__
        with tempfile.TemporaryDirectory() as tmp:
            cfg = TrainConfig(**{**{k: v for k, v in results.read_config(d).items() if k in fields}, "max_steps": steps,
                                 "budget_s": 0.0, "eval_limit": 0, "output_dir": tmp, "data_dir": None, "resume": False})
            train_mod.train(cfg, *(model_factory(cfg) if model_factory else (None, None)))
            got = results.training_rows(results.read_rows(tmp))
        want = results.training_rows(results.read_rows(d))[:steps]
        bad = next((w["step"] for g, w in zip(got, want) if {k: v for k, v in g.items() if keep(k)} != {
            k: v for k, v in w.items() if keep(k)}), None if len(got) == len(want) else len(got))
        ok &= bad is None
        how = "bit for bit" if same else f"kept indices and rewards only (made on {done.get('cpu')}, {done.get('threads')} threads)"
        log(f"{d}: its first {len(want)} step(s) re-run, compared {how}: " + ("the same" if bad is None else f"differ at step {bad}"))
    return ok


# ---------------------------------------------------------------- CLI
def build_parser():
    p = cli.Parser(prog="python -m minipods.compare", description=__doc__.split("\n\n")[0])
    p.add_argument("--output-dir", default="runs/compare",
                   help="comparison folder: one sub-folder per arm, figures (default: runs/compare)")
    p.add_argument("--small", action="store_true", help=f"the classroom study (= --preset {SMALL_PRESET}: PODS 16 -> 4 "
                   "vs GRPO 4 vs random at equal training time; about an hour on 2 cores)")
    p.add_argument("--preset", choices=sorted(PRESETS), default=None, help="shared settings (paper: GRPO n=m=16 vs "
                   "PODS n=64 m=16); explicit flags override (default: none, train's defaults)")
    p.add_argument("--arms", default=None, help=f"comma-separated, from {','.join(ARMS)} (default: "
                   f"{','.join(DEFAULT_ARMS)}; --preset laptop: {','.join(LAPTOP_ARMS)}; small: {','.join(SMALL_ARMS)})")
    p.add_argument("--seeds", default=None, help="run every arm once per seed, e.g. 0,1,2 (folders seed{s}/ARM)")
    p.add_argument("--merge", nargs="+", metavar="DIR", default=None, help="merge these seed folders and studies into "
                   "one study in --output-dir (a class's hand-ins: docs/class_study.md); nothing is trained")
    p.add_argument("--audit", metavar="HANDIN", default=None, help="re-run the first --steps steps of each arm of a "
                   "hand-in and compare them with its rows (docs/teaching.md); exit 1 where they differ")
    p.add_argument("--steps", type=int, default=AUDIT_STEPS, help=f"--audit: steps per arm (default {AUDIT_STEPS})")
    cli.add_dataclass_args(p, TrainConfig, skip=_PER_ARM, default_label="train default")
    return p


def main(argv=None) -> int:
    prog, args = "minipods.compare", build_parser().parse_args(argv)
    try:
        if args.small and args.preset and args.preset != SMALL_PRESET:
            raise ValueError(f"--small conflicts with --preset {args.preset}")
        preset = args.preset or (SMALL_PRESET if args.small else None)
        shared = cli.overrides(args, TrainConfig, skip=_PER_ARM)
        if (args.merge or args.audit) and (shared or args.small or args.preset or args.seeds or args.arms):
            raise ValueError("--merge and --audit take only the folders (their settings come with them)")
        if args.audit and args.steps < 1:
            raise ValueError(f"--steps must be >= 1, got {args.steps}")
        if args.audit:
            return 0 if audit(args.audit, args.steps) else 1
        out = merge.merge(args.merge, args.output_dir) if args.merge else \
            run_comparison(args.output_dir, args.arms, preset, seeds=args.seeds, **shared)
    except KeyboardInterrupt:
        print(f"\n{prog}: interrupted; run the same command again to resume the unfinished arm(s).", file=sys.stderr)
        return 130
    except (ValueError, OSError) as e:
        return cli.fail(prog, e)
    print("\n" + (out / "summary.md").read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
