"""Will it fit my GPU? `python -m minipods.plan`: the memory and time of the PODS recipe on one card.

PODS (paper, Section 3): generation holds the KV cache of the rollouts in flight, the update one
micro-batch's activations, the adapter's gradients and the optimizer, so past a full generate call and
micro-batch n and m cost time, not memory. Parts: footprint.py (counted), activations.py (measured on a
CPU); step times: costmodel.py; output: docs/gpu.md."""

from __future__ import annotations

from dataclasses import dataclass
from types import SimpleNamespace

from minipods.cli import Parser, add_dataclass_args, check_positive, fail, overrides, setting
from minipods.measure import activations as A
from minipods.measure import footprint as F
from minipods.measure.common import format_table

GIB = 2 ** 30
PRESETS = ("paper", "consumer")
N_LADDER = (4, 8, 16, 32, 64, 128, 256, 512, 1024)  # candidates when --n is left open
M_LADDER = (1, 2, 4, 8, 16, 32, 64, 128)  # candidates when --m is left open
PROG = "python -m minipods.plan"
# the TrainConfig fields the planner prices -> its names for them in a Recipe
RECIPE_FIELDS = {"model": "model", "quantize": "quantize", "optimizer": "optimizer", "lora_r": "lora_r", "n": "n",
                 "m": "m", "prompts_per_step": "prompts", "max_prompt_tokens": "prompt_tokens",
                 "max_new_tokens": "new_tokens", "micro_batch_size": "micro_batch", "gen_batch_size": "gen_batch",
                 "gradient_checkpointing": "ckpt", "logprob_chunk": "chunk", "eval_batch_size": "eval_batch",
                 "eval_max_new_tokens": "eval_tokens"}


@dataclass
class PlanConfig:
    """What the planner prices; every field left out comes from the preset (minipods.train.PRESETS)."""
    preset: str = setting("paper", "the recipe the other settings change: paper | consumer")
    model: str | None = setting(None, "Qwen/Qwen2.5-0.5B/1.5B/3B-Instruct, smollm2-135m-instruct, random:<id>[:layers=..], "
                                      "or a local HF folder (the preset's model)")
    gpu_gb: float = setting(24.0, "the card's memory in GiB (8, 12, 16, 24, 48, 80, ...)")
    gpu: str = setting("unknown", "the card's name: step times are quoted for L40S (the paper's) or from --costmodel; "
                                  "for any other card the planner prices memory and says the time is unknown")
    headroom_gb: float = setting(1.0, "GiB left free for the CUDA context and the allocator's slack")
    n: int | None = setting(None, "rollouts generated per prompt (open: a ladder of candidates)")
    m: int | None = setting(None, "rollouts kept per prompt (open: a ladder of candidates)")
    prompts_per_step: int | None = setting(None, "questions per step")
    max_prompt_tokens: int | None = setting(None, "prompt length (worst case: every prompt this long)")
    max_new_tokens: int | None = setting(None, "completion length (worst case: every completion this long)")
    micro_batch_size: int | None = setting(None, "sequences per forward/backward in the update")
    gen_batch_size: int | None = setting(None, "sequences per generate() call")
    gradient_checkpointing: bool | None = setting(None, "recompute activations in backward")
    quantize: str | None = setting(None, "4bit | none (bf16 base)")
    optimizer: str | None = setting(None, "auto (adamw8bit on a GPU) | adamw | adamw8bit")
    logprob_chunk: int | None = setting(None, "tokens per chunk of the log-prob computation")
    eval_batch_size: int | None = setting(None, "sequences per generate() call at evaluation (greedy: questions at once)")
    eval_max_new_tokens: int | None = setting(None, "completion limit at evaluation (0 = --max-new-tokens)")
    terms: str | None = setting(None, "JSON of `python scripts/measure_terms.py --output FILE`: the measured terms "
                                      "of a model the planner holds none for")
    costmodel: str | None = setting(None, "JSON of `python -m minipods.bench --parts costmodel --output FILE` (fitted "
                                          "lines; else the L40S lines of the paper's runs)")


class Recipe(SimpleNamespace):
    """Preset + flags in RECIPE_FIELDS' planner names; n_open / m_open: which of n and m were left open."""


def make_recipe(pc: PlanConfig) -> Recipe:
    """The preset (minipods.train.PRESETS over TrainConfig's defaults), then the flags given, checked as a run's."""
    from minipods.model import check_quantize
    from minipods.train import make_config
    if pc.preset not in PRESETS:
        raise ValueError(f"--preset must be one of {', '.join(PRESETS)}, got {pc.preset!r}")
    cfg = make_config(pc.preset, **{k: getattr(pc, k, None) for k in RECIPE_FIELDS})  # None: not given
    check_positive(cfg, ("eval_batch_size",))
    if cfg.eval_max_new_tokens < 0:
        raise ValueError(f"--eval-max-new-tokens must be >= 0, got {cfg.eval_max_new_tokens}")
    if not (pc.gpu_gb > 0 and 0 <= pc.headroom_gb < pc.gpu_gb):
        raise ValueError(f"need --gpu-gb > 0 and 0 <= --headroom-gb < --gpu-gb, got {pc.gpu_gb}, {pc.headroom_gb}")
    opt = "adamw8bit" if cfg.optimizer == "auto" else cfg.optimizer
    v = vars(cfg) | dict(quantize=check_quantize(cfg.quantize), optimizer=opt,
                         eval_max_new_tokens=cfg.eval_max_new_tokens or cfg.max_new_tokens)
    return Recipe(**{short: v[k] for k, short in RECIPE_FIELDS.items()}, n_open=pc.n is None, m_open=pc.m is None)


# ---------------------------------------------------------------- the model's terms
@dataclass
class ModelTerms:
    arch: F.Arch
    update: dict  # gradient checkpointing (bool) -> activations.UpdateTerms
    gen: A.GenTerms
    source: str  # "stored" or "measured (FILE)"


def model_terms(model: str, quantize: str | None, terms_file: str | None = None) -> ModelTerms:
    """The architecture and the measured terms: stored for known models (activations.STORED), else read from
    `terms_file` (the same format: one model's entry)."""
    import json
    cfg, q = F.model_config(model), quantize or "none"  # an unknown model fails here first
    t = A.STORED.get(model.removeprefix("random:"), {}).get(q)
    source = "stored" if t else f"measured ({terms_file})"
    if t is None and not terms_file:
        raise ValueError(f"no stored terms for {model} ({q}): measure them with python scripts/measure_terms.py "
                         f"--models {model} --quantize {q} --output FILE, then pass --terms FILE")
    t = t or json.loads(open(terms_file).read()).get(q)
    if t is None:
        raise ValueError(f"{terms_file} holds no terms for --quantize {q}")
    update = {ckpt: A.UpdateTerms(**t["update"][str(ckpt)]) for ckpt in (False, True)}
    return ModelTerms(F.arch_of(cfg), update, A.GenTerms(**t["gen"]), source)


# ---------------------------------------------------------------- the two phases
# A phase is a list of parts (label, bytes, counted): `counted` parts are alive together at the phase's
# peak; the others are shown for what they would take (they peak at another moment, below this one).
def _static_parts(r: Recipe, t: ModelTerms) -> list[tuple[str, float, bool]]:
    w = F.weight_bytes(t.arch, r.quantize)
    kind, rest = ("4-bit NF4 + scales", "float32") if r.quantize == "4bit" else ("bf16", "bf16")
    opt = "AdamW 8-bit" if r.optimizer == "adamw8bit" else "AdamW 32-bit"
    return [(f"base weights: decoder linear layers ({kind})", w["linear"], True),
            (f"base weights: embedding = LM head, norms, biases ({rest})", w["other"], True),
            (f"LoRA weights (r={r.lora_r}, float32)", F.lora_bytes(t.arch, r.lora_r), True),
            (f"optimizer state ({opt}, kept between steps)", F.optimizer_bytes(t.arch, r.lora_r, r.optimizer), True)]


def _phase(rows: int, parts: list) -> dict:
    return {"rows": rows, "parts": parts, "peak": sum(b for _, b, counted in parts if counted)}


def generation_phase(r: Recipe, t: ModelTerms, n: int, gen_batch: int | None = None) -> dict:
    """Peak of generation: static parts + the larger of the shared prefill and the last decode step."""
    rows, el = min(gen_batch or r.gen_batch, r.prompts * n), t.gen.kv_element_bytes
    g = A.predict_decode(t.gen, t.arch.kv_elements_per_token * el, t.arch.layers, r.prompts, rows, r.prompt_tokens,
                         r.new_tokens, t.arch.vocab, r.quantize)
    folded = F.weight_bytes(t.arch, None)["linear"]  # fast.inference.folded_copy: the linears once more, bf16
    copy = ("inference copy: none (4-bit policies decode with the adapter unmerged)" if r.quantize == "4bit" else
            f"inference copy: none on a GPU unless asked (fold_adapter=True: {folded / GIB:.2f} GiB)")
    dtype = {4: "float32", 2: "bf16"}.get(el, f"{el} B")
    dec = g["decode_moment"] >= g["prefill_moment"]
    head = g["logits"] > g["growth"] + g["decode_0"]  # the last step peaks at the LM head, not in a layer
    return _phase(rows, _static_parts(r, t) + [
        (copy, 0.0, True),
        (f"KV cache: shared prompt prefill ({r.prompts} x {r.prompt_tokens - 1} tokens, {dtype})", g["prefill"], True),
        (f"KV cache: {rows} rollouts in flight ({rows} x {r.prompt_tokens + r.new_tokens - 1} tokens)", g["rows"], dec),
        ("decode, inside a layer: one layer's prompt keys and values copied to the rows, dequantised weights",
         g["growth"] + g["decode_0"], dec and not head),
        (f"decode, at the LM head: {A.decode_buffers(r.quantize):.1f} x ({rows} x {t.arch.vocab}) float32 logits",
         g["logits"], dec and head),
        (f"prefill working set: {r.prompts} prompts x {r.prompt_tokens} tokens", g["prefill_moment"] - g["prefill"],
         not dec)])


def evaluation_phase(r: Recipe, t: ModelTerms, eval_batch: int | None = None) -> dict:
    """Peak of one greedy evaluation call (eval_batch questions at once), the training state held."""
    q = eval_batch or r.eval_batch
    return generation_phase(Recipe(**{**vars(r), "prompts": q, "gen_batch": q, "new_tokens": r.eval_tokens}), t, 1)


def update_phase(r: Recipe, t: ModelTerms, m: int, micro_batch: int | None = None) -> dict:
    """Peak of the update: static parts + gradients + the larger of a micro-batch's and the optimizer step's."""
    rows, tokens = min(micro_batch or r.micro_batch, r.prompts * m), r.prompt_tokens + r.new_tokens
    u = A.predict_update(t.update[r.ckpt], t.arch.layers, rows, tokens, rows * r.new_tokens, t.arch.vocab,
                         r.quantize, r.chunk)
    sizes = F.lora_shapes(t.arch, r.lora_r)
    step = A.OPTIMIZER_STEP_BUFFERS[r.optimizer] * 4 * (max(sizes) if r.optimizer == "adamw8bit" else sum(sizes))
    mb = u["peak"] >= step  # the micro-batch, not the optimizer step, sets the peak
    lp = u["logprob"] > u["working"]
    what = "each layer's input: checkpointing" if r.ckpt else "every layer's activations"
    return _phase(rows, _static_parts(r, t) + [
        ("gradients (float32, the adapter's size)", F.lora_bytes(t.arch, r.lora_r), True),
        (f"saved activations: micro-batch of {rows} x {tokens} tokens ({what})", u["saved"], mb),
        ("backward working set: " + ("one layer recomputed, " if r.ckpt else "") + "gradient buffers, dequantised "
         "weights", u["working"], mb and not lp),
        (f"chunked log-prob buffer: {A.logprob_buffers(r.quantize):.2f} x ({min(r.chunk, rows * r.new_tokens)} x "
         f"{t.arch.vocab}) float32", u["logprob"], mb and lp),
        ("optimizer step working set", step, not mb)])


def fits(peak: float, pc: PlanConfig) -> bool:
    return peak + pc.headroom_gb * GIB <= pc.gpu_gb * GIB


def largest_batch(phase, r: Recipe, t: ModelTerms, k: int, pc: PlanConfig, cap: int) -> int:
    """The largest batch <= `cap` for which `phase` fits (0: none), by bisection: memory grows with it."""
    lo, hi = 0, cap
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if fits(phase(r, t, k, mid)["peak"], pc):
            lo = mid
        else:
            hi = mid - 1
    return lo


# ---------------------------------------------------------------- candidates, time, the verdict
def candidates(r: Recipe) -> list[tuple[int, int]]:
    """(n, m) pairs to price: the recipe's, and a ladder for each of n and m left open."""
    out = {(r.n, r.m)}
    if r.n_open:
        out |= {(n, r.m) for n in N_LADDER if n >= r.m}
    if r.m_open:
        out |= {(r.n, m) for m in M_LADDER if m <= r.n}
    return sorted(out)


def cost_model(pc: PlanConfig, r: Recipe):
    """(CostModel, where its lines come from); (None, why) for a card with no step time measured."""
    from minipods.measure import costmodel as C
    if pc.costmodel:
        return C.load_fit(pc.costmodel), f"fitted lines of {pc.costmodel}"
    if pc.gpu.upper() != "L40S":
        return None, (f"unknown on this card{'' if pc.gpu == 'unknown' else f' ({pc.gpu})'}: no step time has been measured on it. The paper's are for an "
                      "L40S (--gpu L40S); time yours with `python -m minipods.bench --parts costmodel --output "
                      "bench.json` and pass --costmodel bench.json")
    same = (r.model.removeprefix("random:"), r.prompt_tokens, r.new_tokens) == ("Qwen/Qwen2.5-3B-Instruct", 512, 512)
    return C.paper_l40s_model(), ("L40S lines fitted to the paper's {runs} released runs ({fixed_s:.1f} s + {rollout_s:.3f} s "
                                  "per generated + {update_s:.3f} s per kept rollout; Qwen2.5-3B, 512 + 512 tokens, 1 "
                                  "prompt per step)".format(**C.L40S_FIT) + ("" if same else ", NOT this model or length"))


def plan(pc: PlanConfig) -> dict:
    """Everything the planner prints, as numbers: the recipe, both phases, the candidates, the maxima."""
    r = make_recipe(pc)
    t = model_terms(r.model, r.quantize, pc.terms)
    cm, source = cost_model(pc, r)
    rows = []
    for n, m in candidates(r):
        g, u = generation_phase(r, t, n), update_phase(r, t, m)
        s = cm.step_seconds(n, m, r.prompts) if cm else {"grpo": None, "pods": None}
        rows.append({"n": n, "m": m, "generation": g, "update": u, "fits": fits(g["peak"], pc) and fits(u["peak"], pc),
                     "grpo_s": s["grpo"], "pods_s": s["pods"], "break_even": cm and s["pods"] / s["grpo"]})
    top = lambda key, fixed: max((x[key] for x in rows if x["fits"] and x[fixed] == getattr(r, fixed)), default=0)  # noqa: E731
    u, T = t.update[r.ckpt], r.prompt_tokens + r.new_tokens
    return {"recipe": r, "terms": t, "time_source": source, "rows": rows,
            "generation": generation_phase(r, t, r.n), "update": update_phase(r, t, r.m),
            "evaluation": evaluation_phase(r, t), "eval_batch_max": largest_batch(
                lambda r_, t_, k, b: evaluation_phase(r_, t_, b), r, t, 1, pc, r.eval_batch),
            "n_max": top("n", "m") if r.n_open else None, "m_max": top("m", "n") if r.m_open else None,
            "gen_batch_max": largest_batch(generation_phase, r, t, r.n, pc, r.prompts * r.n),
            "micro_batch_max": largest_batch(update_phase, r, t, r.m, pc, r.prompts * r.m),
            "kv_per_rollout": t.arch.kv_elements_per_token * t.gen.kv_element_bytes * (T - 1),
            "activations_per_kept": u.saved(t.arch.layers, 1, T) + u.working(1, T) - u.work_0}


def _gib(b: float) -> str:
    return f"{b / GIB:.2f}"


def verdict(p: dict, pc: PlanConfig) -> list[str]:
    """The plain-language end: does the recipe fit, what limits n and m, what a step costs."""
    r, g, u = p["recipe"], p["generation"], p["update"]
    name = f"{r.model} ({'4-bit' if r.quantize else 'bf16'})"
    if fits(g["peak"], pc) and fits(u["peak"], pc):
        out = [f"Verdict: yes. {name} runs PODS n={r.n} -> m={r.m} on a {pc.gpu_gb:g} GiB card: generation peaks at "
               f"{_gib(g['peak'])} GiB and the update at {_gib(u['peak'])} GiB, with {pc.headroom_gb:g} GiB left free."]
    else:
        bad = [f"the {ph} needs {_gib(x['peak'])} GiB" for ph, x in (("generation", g), ("update", u))
               if not fits(x["peak"], pc)]
        out = [f"Verdict: no. {name}, PODS n={r.n} -> m={r.m}: {' and '.join(bad)}, but a {pc.gpu_gb:g} GiB card leaves "
               f"{pc.gpu_gb - pc.headroom_gb:g} GiB after the headroom."]
        fixes = []
        for ph, x, best, flag in (("generation", g, p["gen_batch_max"], "--gen-batch-size"),
                                  ("update", u, p["micro_batch_max"], "--micro-batch-size")):
            if not fits(x["peak"], pc):
                levers = ["--quantize 4bit"] * (not r.quantize) + ["--gradient-checkpointing"] * (not r.ckpt)
                fixes.append(f"{flag} {best} fits" if best else f"the {ph} does not fit even one sequence at a time: "
                             f"try {', '.join(levers + ['shorter --max-new-tokens'])} or a smaller model")
        out.append("Try: " + "; ".join(fixes) + ".")
    out.append(f"n and m: a generate call holds at most {g['rows']} rollouts ({p['kv_per_rollout'] / 2**20:.1f} MiB of KV "
               f"cache each, no gradients) and a micro-batch {u['rows']} kept rollouts "
               f"({p['activations_per_kept'] / 2**20:.1f} MiB of activations each), so beyond them n and m cost time, "
               f"not memory. The largest batches that fit: a generate call of {p['gen_batch_max'] or 'none'} rollouts (of "
               f"{r.prompts * r.n}), a micro-batch of {p['micro_batch_max'] or 'none'} (of {r.prompts * r.m}).")
    if p["n_max"] is not None or p["m_max"] is not None:
        tops = [f"{k} = {p[k + '_max'] or 'none'}" for k in ("n", "m") if p[k + "_max"] is not None]
        out.append(f"Of the candidates above, the largest that fit: {', '.join(tops)}.")
    e = p["evaluation"]
    out.append(f"Evaluation ({e['rows']} questions per generate call, greedy, {r.eval_tokens} new tokens): peaks at "
               f"{_gib(e['peak'])} GiB, " + ("fits." if fits(e["peak"], pc) else "DOES NOT FIT: --eval-batch-size "
                                             f"{p['eval_batch_max'] or 'none'} fits."))
    x = next(x for x in p["rows"] if (x["n"], x["m"]) == (r.n, r.m))
    out.append(f"Time: {p['time_source']}." if x["break_even"] is None else
               f"Time ({p['time_source']}): PODS {r.n} -> {r.m} takes {x['pods_s']:.1f} s per step, GRPO n = m = {r.m} "
               f"{x['grpo_s']:.1f} s: PODS pays if one of its steps is worth more than {x['break_even']:.2f} GRPO steps.")
    return out


def format_plan(p: dict, pc: PlanConfig) -> str:
    r, t = p["recipe"], p["terms"]
    head = (f"{PROG}: {r.model} on a {pc.gpu_gb:g} GiB card, {pc.headroom_gb:g} GiB headroom (preset {pc.preset}; "
            f"{t.arch.layers} layers, hidden {t.arch.hidden}, vocabulary {t.arch.vocab}; activation terms {t.source})\n"
            f"recipe: {r.prompts} prompts x n={r.n} -> m={r.m}, {r.prompt_tokens} + {r.new_tokens} tokens, generate "
            f"{r.gen_batch} per call, micro-batch {r.micro_batch}, gradient checkpointing {'on' if r.ckpt else 'off'}, "
            f"{'4-bit NF4' if r.quantize else 'bf16'} base, LoRA r={r.lora_r}, "
            f"{'AdamW 8-bit' if r.optimizer == 'adamw8bit' else 'AdamW 32-bit'}, log-prob chunk {r.chunk}")
    note = ("" if r.ckpt else "\n(no checkpointing: priced as the plain per-row pass; the fast shared-prompt pass "
            "holds less)")
    parts = []
    for phase in ("generation", "update", "evaluation"):
        for label, b, counted in p[phase]["parts"]:
            parts.append([phase, label, _gib(b), "yes" if counted else "no (another moment)"])
        ok = "fits" if fits(p[phase]["peak"], pc) else "DOES NOT FIT"
        parts.append([phase, f"**peak** (+ {pc.headroom_gb:g} GiB headroom: {ok} {pc.gpu_gb:g} GiB)",
                      f"**{_gib(p[phase]['peak'])}**", ""])
    cands = [[f"{x['n']}{' *' if (x['n'], x['m']) == (r.n, r.m) else ''}", x["m"], x["generation"]["rows"],
              x["update"]["rows"], _gib(x["generation"]["peak"]), _gib(x["update"]["peak"]),
              "yes" if x["fits"] else "NO", *((f"{x['grpo_s']:.1f}", f"{x['pods_s']:.1f}", f"{x['break_even']:.2f}")
                                              if x["break_even"] else ("unknown",) * 3)] for x in p["rows"]]
    return "\n\n".join([head, format_table(parts, ("phase", "part", "GiB", "at the peak")) + note,
                        "candidates (* = the recipe):\n" + format_table(cands, (
                            "n", "m", "in flight", "micro-batch", "generation GiB", "update GiB",
                            f"fits {pc.gpu_gb:g} GiB", "GRPO s/step (n=m)", "PODS s/step", "break-even gain")),
                        "\n".join(verdict(p, pc))])


def main(argv=None) -> int:
    """Returns the exit status: 0, or 2 after one `python -m minipods.plan: error: ...` line."""
    parser = Parser(prog=PROG, description=__doc__.split("\n\n")[0])
    add_dataclass_args(parser, PlanConfig)
    try:
        args = parser.parse_args(argv)
    except SystemExit as e:  # Parser.error has printed its one line (or --help its text)
        return int(e.code or 0)
    pc = PlanConfig(**overrides(args, PlanConfig))
    try:
        p = plan(pc)
    except (ValueError, OSError) as e:
        return fail(PROG, e)
    print(format_plan(p, pc))
    return 0
