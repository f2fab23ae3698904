"""Claims made measurable: cold start, occupancy, managed memory, the x.T.sum(0) row,
the alignment answer. CPU paths and the pure arithmetic here; the GPU paths in
test_exp_claims_gpu.py."""

from __future__ import annotations

import copy

import pytest
from test_exp_syllabus import LESSONS

from gpulab.core.devices import Backend
from gpulab.experiments import (
    fits,
    managed_memory,
    occupancy,
    registry,
    tensor_core_alignment,
)
from gpulab.experiments.inline import run_job

MiB, GiB = 2**20, 2**30
H100 = {"regs_per_sm": 65536, "threads_per_sm": 2048, "blocks_per_sm": 32, "shared_per_sm": 233472}


def run(exp_id, params, inventory):
    events: list[dict] = []
    final = run_job("t", exp_id, params, inventory, events.append, quick=True)
    return final, events


@pytest.mark.parametrize("exp_id", ["occupancy", "managed-memory"])
def test_cupy_experiments_are_registered_with_bench_rows(exp_id):
    exp = registry.get(exp_id)
    assert exp.lesson in LESSONS
    assert "full" in exp.bench_suites and exp.bench_params
    for bp in exp.bench_params:
        exp.params.validate(bp)
    assert {c.backend for c in exp.contenders} == {"cupy"}


@pytest.mark.parametrize("exp_id", ["occupancy", "managed-memory"])
def test_cupy_experiments_without_cupy_say_why_before_starting(exp_id, cpu_inventory):
    final, events = run(exp_id, {}, cpu_inventory)
    assert final == "failed"
    assert [e["type"] for e in events] == ["failed"]  # refused before any work
    msg = events[0]["message"]
    assert "\n" not in msg and "needs an NVIDIA GPU with CuPy" in msg
    assert "switched off for the test" in msg


@pytest.mark.parametrize(
    ("exp_id", "params"),
    [("occupancy", {"n": 400_000_000}), ("managed-memory", {"mib": 1024})],
)
def test_cupy_experiments_refuse_a_size_before_any_cuda_call(
    exp_id, params, cpu_inventory, monkeypatch
):
    """CuPy claimed but absent: the refusal must come before `import cupy` would fail."""
    inv = copy.deepcopy(cpu_inventory)
    inv.backends["cupy"] = Backend("cupy", True, version="fake")
    inv.gpu_reason = ""
    monkeypatch.setattr(fits, "free_device_memory", lambda ctx: (256 * MiB, 80 * GiB))
    final, events = run(exp_id, params, inv)
    assert final == "failed", events[-1]
    assert events[-1]["kind"] == "does-not-fit", events[-1]
    assert "on the GPU but 256.0 MiB is free" in events[-1]["message"]


def test_occupancy_prediction_matches_the_calculator():
    # 16 registers, 32 threads: the 32-blocks-per-SM limit leaves half of 64 warp slots empty.
    assert occupancy.predicted(32, 16, 0, **H100) == (32, "blocks per SM")
    # 16 registers, 256 threads: 8 blocks of 8 warps fill the SM's 2048 threads.
    assert occupancy.predicted(256, 16, 0, **H100) == (8, "threads per SM")
    # 72 registers: 2304 a warp (in units of 256), 28 warps fit, so 3 blocks of 8 warps.
    assert occupancy.predicted(256, 72, 0, **H100) == (3, "registers")
    # 255 registers at 1024 threads: not even one block fits.
    assert occupancy.predicted(1024, 255, 0, **H100) == (0, "registers")
    # Shared memory: 100 KiB a block leaves room for two.
    assert occupancy.predicted(128, 16, 100 * 1024, **H100) == (2, "shared memory")


def test_occupancy_reference_is_the_kernels_sum():
    import numpy as np

    xs = np.array([0.0, 1.5])
    ref = occupancy.heavy_reference(xs, 1.0)
    k = np.arange(occupancy.ACCUMULATORS)
    assert ref[0] == pytest.approx(float(np.sum(k + 1.0 / (k + 1))))
    assert ref[1] - ref[0] == pytest.approx(1.5 * occupancy.ACCUMULATORS)
    assert f"float acc[{occupancy.ACCUMULATORS}]" in occupancy.SOURCE


def test_managed_memory_is_capped_well_inside_free_memory():
    cap = managed_memory.capped_bytes
    assert cap(512 * MiB, 80 * GiB) == 512 * MiB
    assert cap(4 * GiB, 80 * GiB) == GiB  # never more than 1 GiB
    assert cap(GiB, 2 * GiB) <= 0.1 * 2 * GiB  # never more than 10% of what is free
    assert cap(GiB, None) == GiB
    assert cap(GiB, 2 * GiB) % 4 == 0  # whole float32 elements
    assert registry.get("managed-memory").params.get("mib").max == 1024


def test_cold_start_times_a_fresh_process_and_this_one(cpu_inventory):
    final, events = run("cold-start", {"n": 20_000, "processes": 1}, cpu_inventory)
    assert final == "result", events[-1]
    result = events[-1]["result"]
    rows = result["measurements"]
    steps = [m["extra"]["step"] for m in rows if m["contender"] == "fresh-cpu"]
    assert steps == ["python_start", "import_torch", "first_call", "second_call"]
    assert [m["contender"] for m in rows if m["contender"].startswith("warm")] == ["warm-cpu"]
    s = result["summary"]
    assert s["device"] == "cpu" and s["hits_in_range"]
    # A fresh interpreter importing torch costs far more than one warm call of a small op.
    assert s["fresh_steps_s"]["import_torch"] > s["warm_median_s"]
    assert s["fresh_total_over_warm"] > 10
    assert "no CUDA context" in result["explanation"]
    assert result["unavailable"]["fresh-gpu"] and result["unavailable"]["warm-gpu"]


def test_cold_start_reports_a_failing_child_in_one_line(cpu_inventory, monkeypatch):
    from gpulab.experiments import cold_start

    monkeypatch.setattr(cold_start, "CHILD", "import sys; sys.exit('no torch in this one')")
    final, events = run("cold-start", {"n": 1000}, cpu_inventory)
    assert final == "failed"
    assert events[-1]["message"] == "the fresh process failed (exit 1): no torch in this one"


def test_memory_layout_has_the_seeds_transposed_sum(cpu_inventory):
    from gpulab.experiments.memory_layout import TRANSPOSED_SUM

    final, events = run("memory-layout", {"cpu_size": 64}, cpu_inventory)
    assert final == "result"
    result = events[-1]["result"]
    assert TRANSPOSED_SUM in [m["contender"] for m in result["measurements"]]
    assert [v["passed"] for v in result["verdicts"] if v["contender"] == TRANSPOSED_SUM] == [True]
    assert result["summary"]["transposed_sum_over_row_sum"] > 0


def test_alignment_answer_is_the_runs_worst_slowdown(cpu_inventory):
    answer = tensor_core_alignment.measured_answer(
        {"fp16": {"4096": 1.0, "4097": 4.2}, "bf16": {"4096": 1.0, "4095": 4.8}}
    )
    assert answer == {"worst_slowdown": 4.8, "worst_dtype": "bf16", "worst_size": 4095}
    assert tensor_core_alignment.measured_answer({}) == {}
    final, events = run("tensor-core-alignment", {"cpu_size": 64}, cpu_inventory)
    assert final == "result"
    result = events[-1]["result"]
    s = result["summary"]
    assert s["worst_slowdown"] == max(s["worst"].values())
    assert f"took {s['worst_slowdown']:.1f}x the aligned time" in result["explanation"]


# ---------------------------------------------------------------------------- tensor cores

KERNEL_NAMES = {
    # Seen on an H100: plain fp32 is CUDA cores although the name says "xmma".
    "sm80_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize128x128x16_stage4_warpsize2x2x1_ffma_"
    "aligna4_alignc4_execute_kernel__5x_cublas": ("no", "ffma"),
    "nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT": ("yes", "nvjet type code tst"),
    "nvjet_sm90_hsh_128x256_64x4_2x1_v_bz_coopB_TNT": ("yes", "nvjet type code hsh"),
    "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x256x64_wgmma": ("yes", "wgmma"),
    "ampere_fp16_s16816gemm_fp16_128x128_ldg8_f2f_stages_32x5_nn": ("yes", "16816"),
    "volta_sgemm_128x64_nn": ("no", "sgemm"),
    "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>>": (
        "n/a",
        "not a matmul kernel",
    ),
}


@pytest.mark.parametrize("name", sorted(KERNEL_NAMES))
def test_tensor_core_verdict_by_name(name):
    from gpulab.experiments import tensor_cores as tc

    assert tc.by_name(name) == KERNEL_NAMES[name]


def test_tensor_core_verdict_by_rate():
    from gpulab.experiments import tensor_cores as tc

    assert tc.by_rate(600.0, 51.0)[0] == "yes"
    assert "11.8x the fp32 CUDA-core ceiling" in tc.by_rate(600.0, 51.0)[1]
    assert tc.by_rate(45.0, 51.0)[0] == "no"
    assert tc.by_rate(55.0, 51.0)[0] == "no"  # within the margin: not proof
    assert tc.by_rate(600.0, None)[0] == "unclear"


def test_profiler_dtype_is_a_gpu_choice(cpu_inventory):
    final, events = run(
        "profiler", {"steps": 1, "hidden": 32, "batch": 8, "dtype": "bf16"}, cpu_inventory
    )
    assert final == "result", events[-1]
    result = events[-1]["result"]
    assert result["unavailable"]["bf16"] == "the dtype choice is for GPU matmuls"
    assert result["summary"]["dtype"] == "fp32"
    assert not [m for m in result["measurements"] if m["extra"].get("kind") == "kernel"]


# ---------------------------------------------------------------------------- fp8


def test_fp8_says_where_it_cannot_run(monkeypatch):
    import types

    import torch

    from gpulab.experiments import fp8

    bare = types.SimpleNamespace(__version__="2.0.0")
    assert "has no fp8 matmul" in fp8.unsupported(bare, 0, 4096)
    for cap, ok in (((8, 0), False), ((8, 9), True), ((9, 0), True)):
        monkeypatch.setattr(torch.cuda, "get_device_capability", lambda i, cap=cap: cap)
        assert (fp8.unsupported(torch, 0, 4096) == "") is ok, cap
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda i: (8, 0))
    assert "this GPU is 8.0" in fp8.unsupported(torch, 0, 4096)
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda i: (9, 0))
    assert "multiples of 16" in fp8.unsupported(torch, 0, 4100)


def test_fp8_scaling_fills_e4m3s_range():
    import torch

    from gpulab.experiments import fp8

    x = torch.randn(64, 64) * 1000  # far beyond e4m3's 448 before scaling
    x8, scale = fp8.quantize(torch, x)
    assert x8.dtype == torch.float8_e4m3fn
    back = x8.float() * scale
    assert float(back.abs().max()) == pytest.approx(float(x.abs().max()), rel=0.07)
    assert float(x8.float().abs().max()) <= fp8.E4M3_MAX
    # 3 mantissa bits: each value within 1/16 of itself (relative), far from bf16's 1/256.
    big = x.abs() > 1
    assert float(((back - x).abs() / x.abs())[big].max()) <= 1 / 16 + 1e-6


def test_dtypes_fp8_is_a_gpu_row(cpu_inventory):
    params = {"cpu_size": 64, "n": 10_000, "dtypes": ["fp32", "fp8"]}
    final, events = run("dtypes", params, cpu_inventory)
    assert final == "result", events[-1]
    result = events[-1]["result"]
    assert "sm_89" in result["unavailable"]["matmul-fp8"]
    assert "fp8" not in result["summary"]["matmul_tflops"]


def test_occupancy_blocks_are_whole_warps(cpu_inventory):
    final, events = run("occupancy", {"blocks": "64,48"}, cpu_inventory)
    assert final == "failed" and events[-1]["kind"] == "bad-params"
    assert events[-1]["message"] == (
        "parameter 'blocks': '64,48' is not allowed: 48 is not a multiple of 32 (a warp); "
        "expected multiples of 32 from 32 to 1024"
    )


# ---------------------------------------------------------------------------- headlines


def _result(exp_id: str, summary: dict, rows: list | None = None):
    from gpulab.core.results import Result, RunRecord

    r = Result(RunRecord(exp_id, {}))
    r.summary = summary
    r.measurements = rows or []
    return r


def test_headlines_of_the_new_measurements():
    from gpulab.core.results import Measurement

    def occ(block: int, gbs: float, occupancy: float) -> Measurement:
        m = Measurement("scale", f"block {block}", 1e-3, 1e-3, 1e-3, 3, throughput=gbs)
        m.unit, m.extra = "GB/s", {"occupancy": occupancy}
        return m

    line = registry.get("occupancy").answer(
        _result("occupancy", {}, [occ(32, 1800.0, 0.5), occ(256, 3000.0, 1.0)]),
    )
    assert line == (
        "memory-bound kernel: 1800 GB/s at block 32 (50% predicted occupancy) vs 3000 GB/s "
        "at block 256 (100%)"
    )
    gbs = {"device": 3000.0, "managed-first-touch": 25.0, "managed-prefetched": 2900.0}
    line = registry.get("managed-memory").answer(_result("x", {"gbs": gbs}))
    assert "ran at 25 GB/s, 120x slower" in line and "after a prefetch, 2.9e+03 GB/s" in line
    s = {"fresh_total_over_warm": 20000.0, "fresh_total_s": 4.2, "device": "gpu"}
    line = registry.get("cold-start").answer(_result("x", s))
    assert "(import, CUDA context, first call): 20000x this warm worker's median" in line


def test_profiler_headline_counts_tensor_core_kernels_and_ignores_kernel_rows():
    from gpulab.core.results import Measurement

    op = Measurement("aten::mm", "2048 x 512", 2e-3, 2e-3, 2e-3, 5)
    op.extra = {"share_pct": 61.0, "share_of": "operators' device time"}
    kernel = Measurement("kernel nvjet_sm90_tst", "2048 x 512", 3e-3, 3e-3, 3e-3, 5)
    kernel.extra = {"kind": "kernel"}  # longer, but a kernel row: not the operator answer
    s = {
        "dtype": "bf16",
        "matmul_kernels": 3,
        "tensor_core_kernels": 3,
        "probe": {"measured": "400 TFLOP/s, 8.0x the fp32 CUDA-core ceiling (50)"},
    }
    line = registry.get("profiler").answer(_result("profiler", s, [op, kernel]))
    assert line.startswith("aten::mm took the most time: 61% of the operators' device time")
    assert line.endswith(
        "; 3 of 3 matmul kernels on tensor cores (bf16), measured: 400 TFLOP/s, "
        "8.0x the fp32 CUDA-core ceiling (50)"
    )


def test_dtypes_headline_names_fp8_apart():
    s = {"device": "gpu", "matmul_tflops": {"fp32": 50.0, "bf16": 700.0, "fp8": 1200.0}}
    line = registry.get("dtypes").answer(_result("dtypes", s))
    assert line.startswith("fastest matmul on the GPU: bf16 at 700 TFLOP/s, 14x fp32's rate")
    assert line.endswith("; fp8 (e4m3, scaled) at 1.2e+03 TFLOP/s")
