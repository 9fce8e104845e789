"""Fast checks of minipods.measure (bench, speed, memory) and scripts/vs_trl.py: fits, formatting, the memory
meter, the parts on the tiny model, the CLI.
No timing is asserted (the machine may be shared); only structure and numbers that must hold."""

import json
import math

import numpy as np
import pytest
import torch

from minipods.fast.inference import onednn_linear_available
from minipods.measure import bench, common, memory, speed
from minipods.measure.bench import model_context, run_bench
from minipods.measure.common import fit_linear, fit_power_law, fmt_mb, fmt_s, fmt_x, format_table
from minipods.measure.config import BenchConfig, Context
from minipods.train import make_config
from minipods.measure.memory import MemoryMeter, run_worker
from minipods.twins.tiny import tiny_policy

from conftest import load_script

pytestmark = pytest.mark.measure  # its own tier: CI runs it; `-m 'not measure'` skips it


def test_fit_power_law_recovers_known_exponent():
    x = np.array([16, 256, 4096, 65536, 1_000_000], dtype=float)
    k, c = fit_power_law(x, 3e-8 * x ** 1.5)
    assert k == pytest.approx(1.5, abs=1e-9)
    assert c == pytest.approx(3e-8, rel=1e-6)
    # multiplicative noise of +-5% moves the exponent only a little
    noise = np.array([1.05, 0.95, 1.03, 0.97, 1.0])
    k2, _ = fit_power_law(x, 2.0 * x * noise)
    assert k2 == pytest.approx(1.0, abs=0.02)


def test_fit_linear_exact_line_and_errors():
    slope, intercept, r2 = fit_linear([2, 4, 8, 16], [0.5 * m + 2 for m in (2, 4, 8, 16)])
    assert (slope, intercept, r2) == pytest.approx((0.5, 2.0, 1.0))
    with pytest.raises(ValueError):
        fit_linear([1], [1])
    with pytest.raises(ValueError):
        fit_power_law([1, 2], [0.0, 1.0])  # log of 0


def test_format_table_is_aligned_markdown():
    t = format_table([["a", "bb", "c"], ["dd", "e", "fff"]], headers=("x", "y", "z"))
    assert t.splitlines() == [
        "| x  | y  | z   |",
        "|----|----|-----|",
        "| a  | bb | c   |",
        "| dd | e  | fff |",
    ]


def test_number_formatting():
    assert fmt_s(2.5) == "2.50 s"
    assert fmt_s(0.0123) == "12.3 ms"
    assert fmt_s(5e-6) == "5.0 µs"
    assert fmt_s(float("nan")) == "n/a"
    assert fmt_mb(300) == "300 MB"
    assert fmt_mb(2048) == "2.00 GB"
    assert fmt_x(3) == "3.00x"
    assert fmt_x(float("nan")) == "n/a"
    assert math.isnan(common.ratio(1.0, 0.0))
    assert common.ratio(6.0, 2.0) == 3.0


def test_memory_meter_sees_an_allocation():
    with MemoryMeter("cpu") as mm:
        x = torch.ones(64 * 2**20)  # 256 MB of float32, every page touched
    assert x[-1] == 1
    assert mm.delta_mb >= 200
    assert mm.peak_mb >= mm.base_mb + 200


def test_part_select_small_n():
    from minipods.measure.phases import part_select, rows_select

    r = part_select(None, BenchConfig(select_sizes=[16, 256, 4096], seed=0, quick=True))
    assert r["sizes"] == [16, 256, 4096]
    assert r["m"] == [4, 64, 1024]  # m = n / 4
    assert len(r["seconds"]) == 3 and all(s > 0 for s in r["seconds"])
    assert math.isfinite(r["exponent"])
    assert math.isnan(r["exponent_large_n"])  # only one point with n >= 1024
    rows = rows_select(r)
    assert rows[0][:2] == ["select", "max_variance n=16, m=4"]
    assert rows[-1][1] == "growth exponent (log-log slope), all n"


def test_parts_on_the_tiny_model():
    model, tok = tiny_policy(seed=0)
    cfg = BenchConfig(n=4, max_new_tokens=6, m_values=[2, 4], repeats=1, logprob_batch=4, select_sizes=[16, 64],
                      quick=True, threads=1, speed_prompts=2, speed_n=4, speed_m=2, speed_max_new_tokens=6, speed_rounds=1)
    out = run_bench(cfg, ["rollout", "update", "select"], model=model, tokenizer=tok, log=lambda s: None)
    ro = out["parts"]["rollout"]
    assert 0 < ro["batched"]["tokens"] <= 4 * 6 and 0 < ro["sequential"]["tokens"] <= 4 * 6
    assert ro["ratio"] == pytest.approx(ro["batched"]["tokens_per_s"] / ro["sequential"]["tokens_per_s"])
    up = out["parts"]["update"]
    assert [p["m"] for p in up["points"]] == [2, 4]
    assert all(p["seconds"] > 0 and p["tokens"] > 0 and math.isfinite(p["peak_mb"]) for p in up["points"])
    assert math.isfinite(up["slope_s_per_rollout"])
    # the fast-vs-plain halves (measure/speed.py): ratios of the measured numbers, the roofline of the decoder
    fs = ro["speed"]
    assert fs["n"] == 4 and fs["prompts"] == 2 and 0 < fs["fast"]["tokens"] <= 2 * 4 * 6
    assert fs["ratio"] == pytest.approx(fs["fast"]["tokens_per_s"] / fs["plain"]["tokens_per_s"])
    assert fs["levers"] == {"folded": True, "shared_prefill": True, "packed": onednn_linear_available(),
                            "fused_siblings": onednn_linear_available(), "grown_in_place": True}
    lim, roof = fs["limits"], fs["roofline"]
    assert lim["fp32_tflops"] > 0 and lim["bf16_tflops"] > 0 and lim["mem_gbs"] > 0 and lim["threads"] == 1
    assert roof["batch"] == 8 and roof["matmul_dtype"] == "fp32" and roof["limit_s"] == max(roof["memory_s"], roof["compute_s"])
    assert fs["x_limit"] == pytest.approx(fs["decode_step_s"] / roof["limit_s"])
    us = up["speed"]
    assert us["rows"] == 4 and us["groups"] == 2 and set(us["seconds"]) == {"fast", "plain", "unshared"}
    assert us["ratio_plain"] == pytest.approx(us["seconds"]["plain"] / us["seconds"]["fast"])
    assert any(f"{fs['x_limit']:.1f} x the limit" in line for line in out["table"].splitlines())
    assert any("plain / grpo_update time" in line for line in out["table"].splitlines())
    assert set(out["parts"]) == {"rollout", "update", "select"}
    parts_in_table = {line.split("|")[1].strip() for line in out["table"].splitlines()[2:]}
    assert parts_in_table == {"rollout", "update", "select"}
    assert any(n.startswith("update:") for n in out["notes"])


def test_trl_comparison_skips_without_trl(monkeypatch):
    vs_trl = load_script("vs_trl")
    monkeypatch.setattr(vs_trl, "trl_available", lambda: False)
    r = vs_trl.part_trl(Context(device="cpu"), BenchConfig())
    assert r == {"skipped": "skipped (pip install -r requirements-trl.txt)"}
    assert vs_trl.rows_trl(r) == [["trl", "minipods vs trl.GRPOTrainer", r["skipped"]]]


def test_config_quick_and_overrides():
    p = bench.build_parser()
    cfg = bench.config_from_args(p.parse_args(["--quick"]))
    assert (cfg.threads, cfg.max_new_tokens, cfg.repeats, cfg.m_values) == (1, 64, 1, [2, 4, 8, 16])
    assert cfg.select_sizes[0] == 16 and cfg.select_sizes[-1] == 1_000_000
    assert (cfg.speed_prompts, cfg.speed_n, cfg.speed_m, cfg.speed_max_new_tokens, cfg.speed_rounds) == (4, 8, 4, 32, 1)
    cfg = bench.config_from_args(p.parse_args(["--quick", "--threads", "2", "--m-values", "2,4", "--n", "8"]))
    assert (cfg.threads, cfg.m_values, cfg.n) == (2, [2, 4], 8)
    assert (bench.config_from_args(p.parse_args([])).speed_max_new_tokens ==
            make_config("small").max_new_tokens)  # the bench's speed shape is --small's
    cfg = bench.config_from_args(p.parse_args(["--speed-max-new-tokens", "96", "--speed-temperature", "0.9"]))
    assert (cfg.speed_max_new_tokens, cfg.speed_temperature, cfg.speed_rounds) == (96, 0.9, 2)


def test_roofline_arithmetic_on_known_numbers():
    # SmolLM2-135M-like decode step: 30 layers, 9 heads (3 KV) of 64, batch 32 at 128 cached tokens, bf16 cache
    nbytes, flops = speed.decode_step_cost(n_weights=134_000_000, weight_bytes=268_000_000, batch=32, layers=30,
                                           heads=9, kv_heads=3, head_dim=64, context=128, act_bytes=2)
    kv = 32 * 30 * 2 * 3 * 64 * 128 * 2  # keys and values: 94,371,840 bytes
    assert nbytes == 268_000_000 + kv
    assert flops == 2 * 32 * 134_000_000 + 4 * 32 * 30 * 9 * 64 * 128  # 8.576 GFLOP + 0.283 GFLOP
    r = speed.roofline(nbytes, flops, mem_gbs=13.0, tflops=0.75)
    assert r["memory_s"] == pytest.approx(362_371_840 / 13e9) and r["compute_s"] == pytest.approx(8_859_115_520 / 0.75e12)
    assert r["bound"] == "memory" and r["limit_s"] == r["memory_s"]  # 27.9 ms vs 11.8 ms
    r = speed.roofline(nbytes, flops, mem_gbs=13.0, tflops=0.1)  # a slow matmul: compute-bound, 88.6 ms
    assert r["bound"] == "compute" and r["limit_s"] == pytest.approx(0.0885911552, rel=1e-9)


def test_unknown_part_is_an_error(capsys):
    assert bench.main(["--parts", "select,nope"]) == 2
    assert "unknown part" in capsys.readouterr().err


def test_cli_select_quick_writes_bench_json(tmp_path, capsys):
    out = tmp_path / "bench.json"
    assert bench.main(["--parts", "select", "--quick", "--output", str(out)]) == 0
    stdout = capsys.readouterr().out
    assert "| part" in stdout and "growth exponent" in stdout
    data = json.loads(out.read_text())
    assert set(data) == {"meta", "parts", "table", "rows", "notes"}
    assert data["meta"]["parts"] == ["select"] and data["meta"]["threads"] == 1
    sel = data["parts"]["select"]
    assert {"sizes", "m", "seconds", "exponent", "exponent_large_n", "part_s"} <= set(sel)
    assert sel["sizes"] == [16, 256, 4096, 65536, 1_000_000]
    assert len(sel["seconds"]) == 5 and all(s > 0 for s in sel["seconds"])
    assert math.isfinite(sel["exponent_large_n"])


def test_cpu_meter_sees_a_freed_tensor_and_nothing_before_it():
    with MemoryMeter("cpu") as mm:
        x = torch.ones(32 * 2**20)  # 128 MiB, freed before the meter closes: only the peak sees it
        del x
    with MemoryMeter("cpu") as mm2:
        y = torch.ones(2**20)  # 4 MiB
    with MemoryMeter("cpu") as idle:
        pass
    assert mm.kind == "cpu-allocator"
    assert mm.delta_mb == pytest.approx(128, abs=1) and mm2.delta_mb == pytest.approx(4, abs=0.5) and y[0] == 1
    assert idle.delta_mb == 0  # no leftover from the phases before
    assert memory.peak_allocated_bytes(lambda: torch.ones(2**20)) == 4 * 2**20


PROBE = """
import torch
from minipods.measure.memory import MemoryMeter, peak_mb, reset_peak, rss_mb


def alloc(a):
    n = a["mb"] * 2**18                      # float32 elements in a["mb"] MiB
    with MemoryMeter("cpu") as mm:           # the measured phase: a known tensor, every page written
        x = torch.ones(n)
        del x                                # freed before the meter closes: only the peak sees it
    reset_peak("cpu")
    base = rss_mb()
    y = torch.ones(n)
    grew = peak_mb("cpu") - base             # the process-wide peak since reset_peak
    del y
    return {"kind": mm.kind, "delta_mb": mm.delta_mb, "grew_mb": grew}
"""


def test_memory_meter_and_process_peak_in_a_fresh_worker(tmp_path, monkeypatch):
    """A known 64 MiB tensor in a fresh worker: the meter reads its size, and so does the process's peak."""
    import platform
    (tmp_path / "memprobe.py").write_text(PROBE)
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    r = run_worker("memprobe:alloc", {"mb": 64})
    assert "error" not in r, r.get("error")
    assert r["kind"] == "cpu-allocator" and r["delta_mb"] == pytest.approx(64, rel=0.01)
    bad = run_worker("minipods.measure.memory:no_such_function", {})
    assert bad["error"].startswith("worker minipods.measure.memory:no_such_function exited 1")
    if platform.system() != "Linux":
        pytest.skip("a resettable process peak needs Linux")
    assert r["grew_mb"] == pytest.approx(64, rel=0.1)


def test_peak_saved_bytes_counts_activations_not_parameters():
    lin = torch.nn.Linear(100, 100)
    x = torch.randn(64, 100)
    # saved for backward: x (for the weight's gradient) and relu's output, 64 x 100 float32 each
    peak = memory.peak_saved_bytes(lin, lambda: torch.relu(lin(x)).sum().backward())
    assert peak == 2 * 64 * 100 * 4
    x2 = torch.randn(128, 100)
    assert memory.peak_saved_bytes(lin, lambda: torch.relu(lin(x2)).sum().backward()) == 2 * peak
    assert memory.peak_saved_bytes(lin, lambda: (lin.weight ** 2).sum().backward()) == 0  # a parameter only


def test_chunked_and_naive_logprobs_agree_and_are_metered():
    """scripts/logprob_memory.py on the tiny model: the two log-prob passes agree, with and without
    checkpointing, each with a measured peak, and checkpointing is switched back off."""
    lm = load_script("logprob_memory")
    model, tok = tiny_policy(seed=0)
    cfg = BenchConfig(n=4, max_new_tokens=6, logprob_batch=4, logprob_chunk=4, quick=True, threads=1)
    r = lm.part_logprob(model_context(cfg, "cpu", model, tok), cfg)
    assert r["batch_size"] == 4 and r["vocab"] == len(tok) and r["chunk_tokens"] == 4
    assert r["max_abs_diff"] < 1e-4
    assert set(r["runs"]) == {"plain", "grad_ckpt"}
    assert all(math.isfinite(x["chunked"]["peak_mb"]) and math.isfinite(x["naive"]["peak_mb"]) for x in r["runs"].values())
    assert not model.get_base_model().is_gradient_checkpointing
    assert [row[0] for row in lm.rows_logprob(r)] == ["logprob"] * 7
