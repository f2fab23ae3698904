"""The syllabus experiments' CPU paths (CI has no GPU): they run, verify, explain and cancel.

Every run goes through runner.inline.run_job, as the worker runs it, on an inventory with the
GPU backends switched off, so these tests exercise the CPU path on any machine.
"""

from __future__ import annotations

import copy
import math

import pytest
from headline_checks import assert_headline

from gpulab.core.devices import detect
from gpulab.experiments import registry
from gpulab.experiments.inline import run_job

LESSONS = {
    "why-gpus",
    "inside-the-gpu",
    "cuda-programming-model",
    "checking-your-setup",
    "cupy-numpy-for-gpus",
    "pytorch-on-the-gpu",
    "timing-honestly",
    "parallel-patterns",
    "memory-management",
    "transfers",
    "dtypes-and-tensor-cores",
    "performance-regimes",
    "mixed-precision",
    "profiling",
    "many-gpus",
    "debugging",
    "applications",
}

# Tiny sizes: each run takes well under a second on two CI cores.
CPU_PARAMS = {
    "vector-add": {"n": 100_000},
    "reduction": {"n": 100_003, "cpu_n": 100_003},
    "bandwidth": {"min_size": "64Ki", "max_size": "1Mi"},
    "create-on-device": {"n": 100_000},
    "round-trips": {"n": 1000, "steps": 5},
    "batching": {"batch": 8, "size": 16},
    "in-place": {"n": 100_000},
    "dtypes": {"cpu_size": 64, "n": 10_000},
    "tensor-core-alignment": {"cpu_size": 64},
    "memory-layout": {"cpu_size": 64},
    "kernel-fusion": {"n": 10_000, "compile": False},
    "mixed-precision": {"steps": 3, "hidden": 32, "batch": 16},
    "profiler": {"steps": 2, "hidden": 32, "batch": 8},
    "memory": {"gib": 0.02, "hold_s": 0.2},
    "cold-start": {"n": 1000, "processes": 1},
}
IDS = sorted(CPU_PARAMS)


def run(exp_id, params, inventory, is_cancelled=None):
    events: list[dict] = []
    final = run_job(
        "t", exp_id, params, inventory, events.append, quick=True, is_cancelled=is_cancelled
    )
    return final, events


@pytest.mark.parametrize("exp_id", IDS)
def test_registered_with_bench_sizes(exp_id):
    exp = registry.get(exp_id)
    module = exp_id.replace("-", "_")
    assert module in registry.MODULES
    assert exp.lesson in LESSONS
    assert "full" in exp.bench_suites and exp.bench_params
    for bp in exp.bench_params:
        exp.params.validate(bp)  # every benchmark size is a valid parameter set
    assert exp.contenders and exp.title and exp.summary


@pytest.mark.parametrize("exp_id", IDS)
def test_cpu_path_runs_verifies_and_explains(exp_id, cpu_inventory):
    final, events = run(exp_id, CPU_PARAMS[exp_id], cpu_inventory)
    assert final == "result", [e for e in events if e["type"] == "failed"]
    rows = [e for e in events if e["type"] == "measurement"]
    assert rows, "measurements are emitted as they finish"
    result_event = events[-1]
    assert result_event["type"] == "result"
    assert events.index(rows[0]) < len(events) - 1
    result = result_event["result"]
    assert result["lesson"] in LESSONS
    assert len(result["explanation"]) > 200
    assert_headline(exp_id, result)
    for v in result["verdicts"]:
        assert v["passed"], v
    for m in result["measurements"]:
        t = m["time_median_s"]
        assert t is not None and t >= 0 and math.isfinite(t)
    # Each GPU-only contender says why it did not run.
    exp = registry.get(exp_id)
    for c in exp.contenders:
        if c.backend in ("torch-cuda", "cupy"):
            assert result["unavailable"].get(c.id), c.id


@pytest.mark.parametrize("exp_id", IDS)
def test_cancellation_is_honoured(exp_id, cpu_inventory):
    seen = {"progress": 0}

    def cancelled() -> bool:
        return seen["progress"] >= 1

    events: list[dict] = []

    def emit(e: dict) -> None:
        if e["type"] == "progress":
            seen["progress"] += 1
        events.append(e)

    final = run_job(
        "t", exp_id, CPU_PARAMS[exp_id], cpu_inventory, emit, quick=True, is_cancelled=cancelled
    )
    assert final == "cancelled"
    assert events[-1]["type"] == "cancelled"
    assert not any(e["type"] == "result" for e in events)


def test_vector_add_catches_a_wrong_contender(cpu_inventory, monkeypatch):
    import numpy as np

    real_add = np.add

    def off_by_one(a, b, out=None):  # a broken "kernel" that skips the last element
        real_add(a[:-1], b[:-1], out=out[:-1])
        return out

    monkeypatch.setattr(np, "add", off_by_one)
    final, events = run("vector-add", {"n": 1000}, cpu_inventory)
    assert final == "result"
    verdicts = {v["contender"]: v for v in events[-1]["result"]["verdicts"]}
    assert not verdicts["numpy"]["passed"]  # the poisoned last element is still NaN
    assert verdicts["torch-cpu"]["passed"]


def test_kernel_fusion_reports_a_compile_failure(cpu_inventory, monkeypatch):
    import torch

    def broken(*a, **k):
        raise RuntimeError("no C++ compiler found\nmore detail")

    monkeypatch.setattr(torch, "compile", broken)
    inv = copy.deepcopy(cpu_inventory)
    final, events = run("kernel-fusion", {"n": 1000, "compile": True}, inv)
    assert final == "result"
    why = events[-1]["result"]["unavailable"]["torch-cpu-compile"]
    assert why.startswith("torch.compile failed here: RuntimeError") or "no C++ compiler" in why


def test_memory_refuses_more_than_free_ram(cpu_inventory):
    final, events = run("memory", {"gib": 1000, "hold_s": 0}, cpu_inventory)
    assert final == "failed"
    assert events[-1]["kind"] == "does-not-fit"
    assert "\n" not in events[-1]["message"]


def test_bandwidth_bad_size_range_is_one_line(cpu_inventory):
    final, events = run("bandwidth", {"min_size": "1Mi", "max_size": "64Ki"}, cpu_inventory)
    assert final == "failed" and events[-1]["kind"] == "bad-params"
    assert "min_size" in events[-1]["message"]


def test_pcie_and_size_helpers():
    from gpulab.experiments.bandwidth import sizes_between
    from gpulab.experiments.bandwidth_machine import pcie_gbs

    assert pcie_gbs(5, 16) == pytest.approx(63.0, abs=0.1)
    assert pcie_gbs(4, 16) == pytest.approx(31.5, abs=0.1)
    assert pcie_gbs(3, 8) == pytest.approx(7.88, abs=0.01)
    assert pcie_gbs(9, 16) is None
    assert sizes_between(64 * 2**10, 2**30) == [64 * 2**10 * 4**k for k in range(8)]
    assert sizes_between(4096, 5000) == [4096, 5000]


def test_alignment_helpers():
    from gpulab.experiments.tensor_core_alignment import alignment, candidate_sizes

    assert [alignment(s) for s in (4096, 4080, 4088, 4094, 4095, 4097)] == [64, 16, 8, 2, 1, 1]
    assert candidate_sizes(4100) == [4096, 4080, 4088, 4094, 4095, 4097]


def test_reduction_tolerance_and_kernel_source():
    from gpulab.experiments.reduction import KERNEL_FILE, THREADS, tolerance

    assert tolerance(100_000_000) < 1e-5  # verification.TOLERANCE's fp32 bound at the default size
    assert tolerance(10) < tolerance(10**8)
    src = KERNEL_FILE.read_text()
    assert "reduce_sum_f32" in src and f"#define THREADS {THREADS}" in src
    assert "__shfl_down_sync" in src and "float4" in src


def test_sustained_helper_is_single_calls_on_the_cpu():
    from gpulab.experiments import backends
    from gpulab.experiments.base import Context

    ctx = Context(inventory=detect(), quick=True)
    calls = {"n": 0}

    def fn() -> None:
        calls["n"] += 1

    assert backends.sustained(ctx, fn, "torch-cpu", always=True) == {}
    assert calls["n"] == 0  # no warm-up on the CPU: nothing to settle
    assert backends.regime({}) == "single calls"
    assert backends.regime({"inner": 7, "warmup": 0, "cold": False}).startswith("sustained: 7 ")


def test_dtypes_cpu_rows_are_single_calls_without_boost_rows(cpu_inventory):
    final, events = run("dtypes", CPU_PARAMS["dtypes"], cpu_inventory)
    assert final == "result"
    rows = events[-1]["result"]["measurements"]
    mm_rows = [m for m in rows if m["contender"].startswith("matmul-")]
    assert mm_rows and all(m["extra"]["regime"] == "single calls" for m in mm_rows)
    assert not any("single calls" in m["contender"] for m in rows)  # GPU-only comparison


def test_only_numpy_rows_are_judged_against_the_host_calibration():
    from gpulab.core.peaks import Peaks
    from gpulab.experiments import ceilings

    host = Peaks(key="h", device="cpu", cpu=True, copy_gbs=10.0, matmul_tflops={"fp32": 0.5})
    gpu = Peaks(key="g", device="gpu", cpu=False, copy_gbs=3000.0, h2d_pinned_gbs=55.0)
    gpu.matmul_tflops = {"fp32": 50.0}
    p = ceilings.Ceilings(gpu, host)
    assert ceilings.peak_here(p, "numpy", "matmul:fp32") == 0.5
    assert ceilings.peak_here(p, "numpy", "copy") == 10.0
    assert ceilings.peak_here(p, "torch-cpu", "matmul:fp32") is None  # NumPy's BLAS, not torch's
    assert ceilings.peak_here(p, "torch-cpu", "copy") is None
    assert ceilings.peak_here(p, "torch-cuda", "matmul:fp32") == 50.0
    assert ceilings.peak_here(p, "cupy", "h2d") == 55.0
    assert ceilings.peak_here(ceilings.Ceilings(host), "torch-cuda", "copy") is None


def test_profiler_shares_are_not_a_percent_of_peak(cpu_inventory):
    final, events = run("profiler", CPU_PARAMS["profiler"], cpu_inventory)
    assert final == "result"
    rows = events[-1]["result"]["measurements"]
    assert rows
    for m in rows:
        assert m["percent_of_peak"] is None and m["peak_name"] == ""
        assert 0 < m["extra"]["share_pct"] <= 100
        assert "% of operators' CPU time" in m["note"]
    assert sum(m["extra"]["share_pct"] for m in rows) <= 100.0 + 1e-6


def test_bandwidth_judges_pcie_against_the_measured_pinned_copies():
    from gpulab.core.peaks import Peaks
    from gpulab.experiments import bandwidth_report as bw
    from gpulab.experiments import ceilings

    gpu = Peaks(key="g", device="H100", cpu=False, copy_gbs=2940.0)
    gpu.h2d_pinned_gbs, gpu.d2h_pinned_gbs = 55.0, 52.8
    curves = {"h2d-pinned": [(2.0**30, 54.0)], "d2h-pinned": [(2.0**30, 52.0)]}
    link = {"max_gen": 5, "max_width": 16}
    s = bw.summary(curves, link, 63.0, ceilings.Ceilings(gpu))
    assert s["h2d_pinned_peak_gbs"] == 55.0 and s["d2h_pinned_peak_gbs"] == 52.8
    assert s["h2d_pinned_peak_of_theoretical"] == pytest.approx(55.0 / 63.0)
    assert s["pcie_theoretical_gbs"] == 63.0  # kept, as context
    text = bw.explain(s, True)
    assert "measured ceiling" in text and "63.0 GB/s per direction in theory" in text
    assert "H2D 55.0 GB/s (87%)" in text


def test_kernel_fusion_poisons_an_output_it_writes_in_place(cpu_inventory, monkeypatch):
    from gpulab.experiments import kernel_fusion

    exp = kernel_fusion.EXPERIMENT
    seen = []
    real = exp._prepare

    def spy(ctx, cid, host):
        fn, kernels, dest = real(ctx, cid, host)
        seen.append((cid, dest))
        return fn, kernels, dest

    monkeypatch.setattr(exp, "_prepare", spy)
    final, _ = run("kernel-fusion", CPU_PARAMS["kernel-fusion"], cpu_inventory)
    assert final == "result"
    # Every CPU contender allocates a fresh output on each call: nothing to poison.
    assert seen and all(dest is None for _, dest in seen)


def test_memory_headline_when_nvml_sees_no_process():
    """In a container NVML often attributes no memory to a process: the GPU run's headline then
    gives what torch saw, with NVML's reason, and the headline check reads that figure."""
    from types import SimpleNamespace

    exp = registry.get("memory")
    result = SimpleNamespace(
        summary={
            "context_bytes_nvml": None,
            "nvml_reason": "not supported in this container",
            "reserved_after_del": 1024 * 2**20,
        }
    )
    line = exp.headline(result)
    assert "1024 MiB stayed reserved" in line and "not supported in this container" in line
    assert_headline("memory", {"headline": line, "summary": result.summary, "measurements": []})
