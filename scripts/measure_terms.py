"""Measuring the planner's terms on a CPU: `python scripts/measure_terms.py`.

minipods.measure.activations says what the terms are and how they combine, and reads the known
models' terms (minipods/measure/data/terms.json); this measures them. The model's architecture is built shallow (1 and 2
layers, its real width, a 512-token vocabulary, random weights), loaded exactly as training loads it
(minipods.model.load_policy: 4-bit or bf16 base, LoRA, gradient checkpointing or not, bf16 compute:
the GPU's dtypes) and run on small batches on the CPU, with one torch thread (kernels' scratch memory
depends on the thread count), under two meters of minipods.measure.memory:

  peak_saved_bytes      what autograd holds for backward: the saved activations
  peak_allocated_bytes  every allocation, kernels' temporaries included (the CPU analogue of CUDA's
                        max_memory_allocated)

The per-layer terms come from the 1- and 2-layer models and are checked against a deeper one
(`--check-layers 4`); the vocabulary's and the optimizer step's buffers from a narrow twin with a
large vocabulary (`--buffers`: activations.py's buffer constants). It prints each model's entry of
data/terms.json (6 significant digits); `--store` writes them into that file; `--check-stored` measures
the stored values again (minutes: the 0.5B model at full width) and exits 1 if one moved; `--output
FILE` writes a model's terms for `python -m minipods.plan --terms FILE` (a model without stored terms).
"""

from __future__ import annotations

import contextlib
import copy
import json
import sys
import tempfile
from dataclasses import asdict
from pathlib import Path

import torch

import numpy as np

from minipods.cli import Parser, fail
from minipods.measure import activations as A
from minipods.measure.activations import LORA_R, GenTerms, UpdateTerms, decode_buffers, decode_cache_bytes, predict_update
from minipods.measure.footprint import kv_shape, model_config
from minipods.measure.gpu import recipe_batch
from minipods.measure.memory import peak_allocated_bytes, peak_saved_bytes

MEASURE_VOCAB = 512  # holds the twin tokenizer's 259 ids; the vocabulary's own terms are measured apart
MEASURE_ROWS = 2
MEASURE_TOKENS = (32, 64, 128)  # tokens per row (half prompt, half completion)
MEASURE_PROMPTS = (16, 32, 64)  # prefill: tokens per prompt, 2 prompts
DECODE_ROWS, DECODE_PROMPT, DECODE_NEW = 8, 8, 24


# ---------------------------------------------------------------- shallow models
def shallow_folder(cfg, layers: int, root: Path, vocab: int = MEASURE_VOCAB) -> Path:
    """`cfg`'s architecture with `layers` layers and a `vocab`-token vocabulary, random bf16 weights,
    saved with the twins' byte-level tokenizer as an HF folder that load_policy opens."""
    from transformers import AutoModelForCausalLM

    from minipods.twins.arch import TWIN_SEED, twin_tokenizer

    dest = Path(root) / f"layers{layers}-vocab{vocab}"
    if (dest / "config.json").is_file():
        return dest
    values = copy.deepcopy(cfg.to_dict())
    values.update(num_hidden_layers=layers, vocab_size=vocab)
    if values.get("layer_types"):
        values["layer_types"] = values["layer_types"][:layers]
    tok = twin_tokenizer()
    values.update(bos_token_id=None, eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id)
    c = type(cfg).from_dict(values)
    with torch.random.fork_rng():
        torch.manual_seed(TWIN_SEED)
        model = AutoModelForCausalLM.from_config(c, dtype=torch.bfloat16)
    model.save_pretrained(dest)
    tok.save_pretrained(dest)
    return dest


def _load(folder: Path, quantize: str | None, ckpt: bool, lora_r: int = LORA_R):
    from minipods.model import load_policy

    torch.manual_seed(0)
    model, tok = load_policy(str(folder), quantize=quantize, lora_r=lora_r, lora_alpha=lora_r, dtype="bfloat16",
                             device="cpu", gradient_checkpointing=ckpt)
    return model, tok


def measure_micro_batch(model, rows: int, tokens: int, chunk: int = 512, seed: int = 0) -> dict:
    """Saved and allocated peak bytes of one micro-batch's forward + backward (grpo.token_logprobs, the
    update's pass with checkpointing, or the plain pass without), gradients already allocated."""
    from minipods.grpo import token_logprobs

    b = recipe_batch(model, 1, rows, tokens, seed=seed)[0]

    def step():
        logp = token_logprobs(model, b.prompt_ids, b.prompt_mask, b.completion_ids, b.completion_mask,
                              chunk_tokens=chunk)
        (-logp.sum() / max(int(b.completion_mask.sum()), 1)).backward()

    model.train()
    step()  # warm-up: the adapter's gradients exist from here on, as in every micro-batch after the first
    return {"rows": rows, "tokens": tokens, "completion_tokens": int(b.completion_mask.sum()),
            "saved": peak_saved_bytes(model, step), "allocated": peak_allocated_bytes(step)}


def measure_prefill(model, prompts: int, tokens: int, seed: int = 0) -> dict:
    """Allocated peak of the shared prefill (fast.rollouts.prefill_distinct) of `prompts` prompts of
    `tokens` tokens, and the bytes of the KV cache it returns."""
    from minipods.fast.rollouts import prefill_distinct
    from minipods.model import generation_mode

    vocab = model.get_output_embeddings().weight.shape[0]
    ids = torch.randint(3, vocab, (prompts, tokens), generator=torch.Generator().manual_seed(seed))
    am = torch.ones_like(ids)
    am[0, :tokens // 4] = 0
    held = {}

    def run():
        held["kv"] = prefill_distinct(model, ids, am)

    with torch.no_grad(), generation_mode(model):
        run()  # warm-up
        held.clear()
        allocated = peak_allocated_bytes(run)
    kv = held["kv"]
    return {"prompts": prompts, "positions": tokens - 1, "allocated": allocated,
            "kv": sum(k.nbytes + v.nbytes for k, v in kv), "kv_element_bytes": kv[0][0].element_size()}


def kv_per_token(config, element_bytes: int) -> int:
    layers, kv_heads, head_dim = kv_shape(config)
    return 2 * layers * kv_heads * head_dim * element_bytes


def measure_decode(model, tok, rows: int, prompt_tokens: int, new_tokens: int, element_bytes: int,
                   seed: int = 0) -> dict:
    """Allocated peak of generating `rows` rollouts of one prompt in one call (the fast engine, no
    inference copy, as on a GPU), and what of it is KV cache (decode_cache_bytes; element_bytes: the
    cache's dtype, as measure_prefill found it)."""
    from minipods.fast.rollouts import generate_rollouts

    held = {}

    def run():
        torch.manual_seed(seed)
        held["ro"] = generate_rollouts(model, tok, ["a" * prompt_tokens], rows, max_new_tokens=new_tokens,
                                       batch_size=rows, fold_adapter=False)

    run()  # warm-up
    held.clear()
    allocated = peak_allocated_bytes(run)
    ro, cfg = held["ro"], model.config
    cache = decode_cache_bytes(kv_per_token(cfg, element_bytes), cfg.num_hidden_layers, 1, rows, ro.prompt_ids.shape[1],
                               ro.meta["steps"])
    vocab = model.get_output_embeddings().weight.shape[0]
    return {"rows": rows, "vocab": vocab, "allocated": allocated, "kv": cache["prefill"] + cache["rows"],
            "growth": cache["growth"],
            "prompt_tokens": ro.prompt_ids.shape[1], "steps": ro.meta["steps"]}


# ---------------------------------------------------------------- fits
def _lstsq(rows: list[list[float]], ys: list[float]) -> list[float]:
    return [float(x) for x in np.linalg.lstsq(np.array(rows, dtype=float), np.array(ys, dtype=float), rcond=None)[0]]


def fit_update(points: list[dict]) -> UpdateTerms:
    """UpdateTerms from micro-batch points of 1- and 2-layer models (measure_micro_batch + "layers")."""
    feats = [[p["rows"] * p["tokens"], p["rows"] * p["tokens"] * p["layers"], p["rows"] * p["tokens"] ** 2,
              p["rows"] * p["tokens"] ** 2 * p["layers"]] for p in points]
    saved = _lstsq(feats, [p["saved"] for p in points])
    work = _lstsq([[1.0, p["rows"] * p["tokens"], p["rows"] * p["tokens"] ** 2] for p in points],
                  [p["allocated"] - p["saved"] for p in points])
    return UpdateTerms(*saved, *work)


def fit_gen(prefill: list[dict], decode: list[dict], quantize: str | None) -> GenTerms:
    pre = _lstsq([[1.0, p["prompts"] * p["positions"], p["prompts"] * p["positions"] ** 2] for p in prefill],
                 [p["allocated"] - p["kv"] for p in prefill])
    # with a 512-token vocabulary the last step peaks inside a layer: what is left there is decode_0
    rest = [d["allocated"] - d["kv"] - d["growth"] for d in decode]
    return GenTerms(prefill[0]["kv_element_bytes"], *pre, float(np.mean(rest)))


# ---------------------------------------------------------------- measuring a model's terms
def _measure_layers(folder: Path, quantize: str | None, layers: int, log) -> dict:
    """Every point of one shallow model: micro-batches with and without checkpointing, prefills, a decode."""
    out = {False: [], True: [], "prefill": [], "decode": []}
    for ckpt in (False, True):
        model, tok = _load(folder, quantize, ckpt)
        out[ckpt] = [{"layers": layers, **measure_micro_batch(model, MEASURE_ROWS, t)} for t in MEASURE_TOKENS]
        if not ckpt:
            out["prefill"] = [{"layers": layers, **measure_prefill(model, 2, t)} for t in MEASURE_PROMPTS]
            el = out["prefill"][0]["kv_element_bytes"]
            out["decode"] = [{"layers": layers, **measure_decode(model, tok, DECODE_ROWS, DECODE_PROMPT, DECODE_NEW, el)}]
        log(f"  {layers} layer(s), checkpointing {ckpt}: {[p['saved'] for p in out[ckpt]]} saved bytes")
        del model
    return out


@contextlib.contextmanager
def one_thread():
    """Kernels allocate per-thread scratch memory: measure with one torch thread, as STORED was measured."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


def measure_terms(cfg, quantize: str | None, check_layers: int = 0, log=lambda s: None) -> dict:
    """{"update": {ckpt: UpdateTerms}, "gen": GenTerms, "check": relative errors at `check_layers`}:
    measured on 1- and 2-layer models of `cfg`'s width, checked on a `check_layers`-layer one (0: no check)."""
    with tempfile.TemporaryDirectory(prefix="minipods-terms-") as root, one_thread():
        pts = [_measure_layers(shallow_folder(cfg, L, root), quantize, L, log) for L in (1, 2)]
        update = {ckpt: fit_update(pts[0][ckpt] + pts[1][ckpt]) for ckpt in (False, True)}
        gen = fit_gen(pts[0]["prefill"] + pts[1]["prefill"], pts[0]["decode"] + pts[1]["decode"], quantize)
        check = {}
        if check_layers:
            deep = _measure_layers(shallow_folder(cfg, check_layers, root), quantize, check_layers, log)
            check = check_terms(update, gen, deep, quantize)
    return {"update": update, "gen": gen, "check": check}


def check_terms(update: dict, gen: GenTerms, deep: dict, quantize: str | None) -> dict:
    """Relative error (predicted / measured - 1) of each term on the deeper model's points."""
    err = {}
    for ckpt in (False, True):
        for p in deep[ckpt]:
            pr = predict_update(update[ckpt], p["layers"], p["rows"], p["tokens"], p["completion_tokens"], MEASURE_VOCAB,
                                quantize)
            err[f"saved ckpt={ckpt} R={p['tokens']}"] = pr["saved"] / p["saved"] - 1
            err[f"micro-batch peak ckpt={ckpt} R={p['tokens']}"] = pr["peak"] / p["allocated"] - 1
    for p in deep["prefill"]:
        err[f"prefill P={p['positions'] + 1}"] = (p["kv"] + gen.prefill(p["prompts"], p["positions"])) / p["allocated"] - 1
    for d in deep["decode"]:
        pr = d["kv"] + max(d["growth"] + gen.decode_0, decode_buffers(quantize) * d["rows"] * d["vocab"] * 4)
        err[f"decode rows={d['rows']}"] = pr / d["allocated"] - 1
    return err


# ---------------------------------------------------------------- the vocabulary's buffers
def measure_buffers(quantize: str | None, vocab: int = 16384, chunk: int = 256) -> dict:
    with one_thread():
        return _measure_buffers(quantize, vocab, chunk)


def _measure_buffers(quantize: str | None, vocab: int, chunk: int) -> dict:
    """LOGPROB_BUFFERS and DECODE_BUFFERS for one base precision, on a narrow 1-layer twin with a large
    vocabulary (so that (tokens x vocab) tensors dominate): float32-sized buffers of chunk x vocab in a
    log-prob chunk's backward, and of rows x vocab per decode step (the slope over 8 and 16 rows)."""
    from minipods.grpo import logprobs_from_states
    from minipods.twins.arch import twin_config

    cfg = twin_config("Qwen/Qwen2.5-0.5B-Instruct", hidden=64, intermediate=128, heads=4, kv_heads=2)
    with tempfile.TemporaryDirectory(prefix="minipods-buffers-") as root:
        model, tok = _load(shallow_folder(cfg, 1, root, vocab), quantize, False)
    dtype = model.get_output_embeddings().weight.dtype
    h = torch.randn(2, 2 * chunk, 64, dtype=dtype, requires_grad=True)
    ids = torch.randint(3, vocab, (2, 2 * chunk))

    def logprob():
        logprobs_from_states(model, h, ids, torch.ones_like(ids), chunk_tokens=chunk).sum().backward()

    logprob()
    lp = (peak_allocated_bytes(logprob) - h.numel() * h.element_size()) / (chunk * vocab * 4)
    el = 4 if dtype == torch.float32 else 2  # the residual stream's dtype is the embedding's
    dec = [measure_decode(model, tok, rows, 8, 8, el) for rows in (8, 16)]
    slope = ((dec[1]["allocated"] - dec[1]["kv"]) - (dec[0]["allocated"] - dec[0]["kv"])) / 8  # at the LM head
    return {"logprob_buffers": lp, "decode_buffers": slope / (vocab * 4)}


@one_thread()
def measure_optimizer_step(kind: str, r: int = LORA_R) -> float:
    """The temporaries of one optimizer step over one 0.5B layer's LoRA tensors (OPTIMIZER_STEP_BUFFERS):
    torch AdamW with foreach (as on CUDA) in copies of all of them, bitsandbytes AdamW8bit (its CPU path)
    in copies of the largest."""
    from minipods.measure.footprint import arch_of, lora_shapes
    from minipods.twins.arch import twin_config

    arch = arch_of(twin_config("Qwen/Qwen2.5-0.5B-Instruct", layers=1))
    params = [torch.nn.Parameter(torch.randn(n)) for n in lora_shapes(arch, r)]
    if kind == "adamw8bit":
        import bitsandbytes as bnb
        opt = bnb.optim.AdamW8bit(params, lr=1e-3)
    else:
        opt = torch.optim.AdamW(params, lr=1e-3, foreach=True)
    for p in params:
        p.grad = torch.randn_like(p)
    opt.step()  # the state exists from the first step on
    unit = max if kind == "adamw8bit" else sum
    return peak_allocated_bytes(opt.step) / (4 * unit(p.numel() for p in params))


# ---------------------------------------------------------------- command line
PROG = "python scripts/measure_terms.py"


def _fmt(v: float) -> str:
    return "0" if abs(v) < 1e-6 else f"{v:.6g}"  # fitted zeros come out as +-1e-11


def _known() -> list[str]:
    from minipods.model import DEFAULT_MODEL
    from minipods.twins.arch import TWIN_CONFIGS
    return [*TWIN_CONFIGS, DEFAULT_MODEL]


def check_stored(log=print) -> list[str]:
    """Measure the stored constants again: the vocabulary's and optimizer step's buffers (within 5%) and
    the 0.5B model's 4-bit terms at full width (within 1%). Returns what moved (empty: all hold)."""
    bad = []

    def near(what, got, stored, rel):
        log(f"{what}: measured {got:.6g}, stored {stored:.6g}")
        if abs(got / stored - 1) > rel:
            bad.append(f"{what}: measured {got:.6g}, stored {stored:.6g}")

    got = measure_buffers("4bit")
    near("LOGPROB_BUFFERS[4bit]", got["logprob_buffers"], A.LOGPROB_BUFFERS["4bit"], 0.05)
    near("DECODE_BUFFERS[4bit]", got["decode_buffers"], A.DECODE_BUFFERS["4bit"], 0.05)
    for kind in ("adamw", "adamw8bit"):
        near(f"OPTIMIZER_STEP_BUFFERS[{kind}]", measure_optimizer_step(kind), A.OPTIMIZER_STEP_BUFFERS[kind], 0.05)
    name = "Qwen/Qwen2.5-0.5B-Instruct"
    t = measure_terms(model_config(name), "4bit")
    for ckpt in (False, True):
        u, g = A.stored_terms(name, "4bit", ckpt)
        near(f"{name} 4bit ckpt={ckpt} saved(24, 4, 1024)", t["update"][ckpt].saved(24, 4, 1024), u.saved(24, 4, 1024),
             0.01)
        near(f"{name} 4bit ckpt={ckpt} working(4, 1024)", t["update"][ckpt].working(4, 1024), u.working(4, 1024), 0.01)
    near(f"{name} 4bit prefill(8, 511)", t["gen"].prefill(8, 511), g.prefill(8, 511), 0.01)
    return bad


def terms_json(t_by_quantize: dict, short: bool = False) -> dict:
    """What `python -m minipods.plan --terms FILE` reads (and data/terms.json holds per model): per base
    precision, the update terms with and without checkpointing and the generation terms; short: each
    value to 6 significant digits, as stored."""
    r = (lambda d: {k: json.loads(_fmt(v)) for k, v in d.items()}) if short else (lambda d: d)  # noqa: E731
    return {q: {"update": {str(ckpt): r(asdict(u)) for ckpt, u in sorted(t["update"].items())},
                "gen": r(asdict(t["gen"]))} for q, t in t_by_quantize.items()}


def main(argv=None) -> int:
    p = Parser(prog=PROG, description="Measure the planner's per-token terms on a CPU and print them as entries "
                                      "of minipods/measure/data/terms.json.")
    p.add_argument("--models", default=",".join(_known()), help="comma-separated models (default: the known ones)")
    p.add_argument("--quantize", default="4bit,none", help="base precisions to measure: 4bit, none")
    p.add_argument("--check-layers", type=int, default=0, help="check the layer extrapolation on this many layers")
    p.add_argument("--buffers", action="store_true", help="measure LOGPROB_BUFFERS, DECODE_BUFFERS and "
                   "OPTIMIZER_STEP_BUFFERS instead")
    p.add_argument("--check-stored", action="store_true", help="measure the stored constants again; exit 1 if one moved")
    p.add_argument("--output", default=None, help="write the (one) model's terms as JSON for python -m minipods.plan --terms")
    p.add_argument("--store", action="store_true", help="write the measured models' terms into data/terms.json")
    args = p.parse_args(argv)
    log = lambda s: print(s, file=sys.stderr, flush=True)  # noqa: E731
    quants = [q.strip() for q in args.quantize.split(",") if q.strip()]
    models = []
    for part in (m.strip() for m in args.models.split(",") if m.strip()):  # a twin's options hold commas too
        if "=" in part and models:
            models[-1] += "," + part
        else:
            models.append(part)
    if any(q not in ("4bit", "none") for q in quants) or args.check_layers < 0 or (args.output and len(models) != 1):
        return fail(PROG, f"--quantize takes 4bit and/or none, --check-layers >= 0, --output one model; got "
                          f"{args.quantize!r}, {args.check_layers}, {len(models)} model(s)")
    if args.check_stored:
        bad = check_stored()
        print("\n".join(bad) if bad else "every stored constant measured again within its tolerance")
        return 1 if bad else 0
    if args.buffers:
        for q in quants:
            print(f"{q}: {measure_buffers(None if q == 'none' else q)}")
        print({kind: round(measure_optimizer_step(kind), 3) for kind in ("adamw", "adamw8bit")})
        return 0
    for name in models:
        try:
            cfg = model_config(name)
        except ValueError as e:
            return fail(PROG, e)
        measured = {}
        for q in quants:
            log(f"measuring {name} ({q}) ...")
            t = measured[q] = measure_terms(cfg, None if q == "none" else q, args.check_layers, log)
            for k, v in t["check"].items():
                print(f"check {name} {q} {k}: {100 * v:+.2f}%")
        print(json.dumps({name: terms_json(measured, short=True)}), flush=True)
        if args.output:
            Path(args.output).write_text(json.dumps(terms_json(measured), indent=1))
        if args.store:  # this model's measured precisions replace the stored ones
            stored = json.loads(A.STORED_FILE.read_text())
            stored.setdefault(name.removeprefix("random:"), {}).update(terms_json(measured, short=True))  # as plan looks up
            A.STORED_FILE.write_text(json.dumps(stored, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
