"""The syllabus experiments' GPU paths (run with -m gpu on a machine with an NVIDIA GPU)."""

from __future__ import annotations

import pytest
from conftest import cupy_available
from headline_checks import assert_headline

from gpulab.core.devices import detect
from gpulab.experiments import registry
from gpulab.experiments.inline import run_job

pytestmark = [pytest.mark.gpu, pytest.mark.alone]  # memory figures of the whole GPU

GPU_PARAMS = {
    "vector-add": {"n": 1_000_003},
    "reduction": {"n": 1_000_003, "cpu_n": 100_000},
    "bandwidth": {"min_size": "64Ki", "max_size": "4Mi"},
    "create-on-device": {"n": 1_000_000},
    "round-trips": {"n": 10_000, "steps": 5},
    "batching": {"batch": 16, "size": 32},
    "in-place": {"n": 1_000_000},
    "dtypes": {"size": 512, "n": 1_000_000},
    "tensor-core-alignment": {"size": 256},
    "memory-layout": {"size": 512},
    "kernel-fusion": {"n": 1_000_000, "compile": True},
    "mixed-precision": {"steps": 5, "hidden": 256, "batch": 64},
    "profiler": {"steps": 2, "hidden": 256, "batch": 64},
    "memory": {"gib": 0.5, "hold_s": 0.3},
    "cold-start": {"n": 1_000_000, "processes": 1},
}


@pytest.fixture(scope="module")
def inventory():
    return detect()


@pytest.mark.parametrize("exp_id", sorted(GPU_PARAMS))
def test_gpu_path(exp_id, inventory):
    events: list[dict] = []
    final = run_job("g", exp_id, GPU_PARAMS[exp_id], inventory, events.append, quick=True)
    assert final == "result", events[-1]
    result = events[-1]["result"]
    for v in result["verdicts"]:
        assert v["passed"], v
    gpus = [d for d in inventory.devices if d.kind == "cuda"]
    assert result["record"]["device"] == gpus[0].name  # it ran on the GPU, not the CPU path
    exp = registry.get(exp_id)
    for c in exp.contenders:
        if c.backend not in ("torch-cuda", "cupy") or (
            c.backend == "cupy" and not cupy_available()
        ):
            continue
        why = result["unavailable"].get(c.id, "")
        if c.id == "torch-compile" and why.startswith("torch.compile failed here"):
            continue  # reported cleanly; what matters is that the run did not crash
        assert not why, (c.id, why)
    assert result["measurements"]
    assert_headline(exp_id, result)


@pytest.mark.parametrize("n", [1, 3, 4, 5, 1023, 4096 * 512 * 4 + 7, 33_554_433])
def test_our_reduction_kernel_sizes(n):
    if not cupy_available():
        pytest.skip("needs CuPy")
    import cupy as cp
    import numpy as np

    from gpulab.experiments.reduction import OurKernel, tolerance

    x = cp.random.random(n, dtype=cp.float32)
    k = OurKernel(0)
    for _ in range(2):  # twice: the ticket must have been reset by the first launch
        k.out.fill(np.nan)
        got = float(k(x).get()[0])
        ref = float(np.sum(x.get(), dtype=np.float64))
        assert abs(got - ref) <= tolerance(n) * ref, (n, got, ref)


_MEMORY_JOB = """
import json
from gpulab.core.devices import detect
from gpulab.experiments.inline import run_job
events = []
final = run_job("m", "memory", {"gib": 0.25, "hold_s": 0}, detect(), events.append, quick=True)
print(json.dumps({"final": final, "summary": events[-1]["result"]["summary"]}))
"""


def test_memory_oom_recovers(inventory):
    # In a process of its own, as the worker runs it: tensors other tests left in this one
    # (a captured graph's pool, a cached segment shared with them) can keep empty_cache from
    # returning the freed block, and the experiment's cache lesson is about a fresh allocator
    import json
    import subprocess
    import sys

    out = subprocess.run(
        [sys.executable, "-c", _MEMORY_JOB], capture_output=True, text=True, timeout=300
    )
    assert out.returncode == 0, out.stderr[-2000:]
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["final"] == "result"
    s = got["summary"]
    assert s["oom_message"]
    assert s["allocated_after_oom"] == s["allocated_before_oom"]
    assert s["reserved_after_del"] > s["reserved_after_empty_cache"]


def test_memory_refuses_more_than_free(inventory):
    events: list[dict] = []
    final = run_job("m", "memory", {"gib": 1000}, inventory, events.append, quick=True)
    assert final == "failed" and events[-1]["kind"] == "does-not-fit"


@pytest.mark.parametrize("exp_id", ["dtypes", "tensor-core-alignment"])
def test_gpu_matmul_rows_use_the_calibrations_regime(exp_id, inventory):
    events: list[dict] = []
    final = run_job("g", exp_id, GPU_PARAMS[exp_id], inventory, events.append, quick=True)
    assert final == "result", events[-1]
    rows = events[-1]["result"]["measurements"]
    timed = [m for m in rows if m["unit"] == "TFLOP/s" and "single calls" not in m["contender"]]
    assert timed
    for m in timed:  # every matmul row, short or long, in the sustained regime
        assert m["extra"]["regime"].startswith("sustained"), m
    if exp_id == "dtypes":
        boost = [m for m in rows if m["contender"].endswith("single calls")]
        assert {m["dtype"] for m in boost} == {m["dtype"] for m in timed}
        # Boost-clock rows are shown for the lesson, never as a % of the sustained peak.
        assert all(m["percent_of_peak"] is None for m in boost)
        assert all(m["extra"]["regime"].startswith("single calls") for m in boost)


# ---------------------------------------------------------------------------- fit estimates

# Sizes where the estimates' main terms dominate their fixed allowance.
FIT_PARAMS = {
    "dtypes": {"size": 4096, "n": 50_000_000},
    "memory-layout": {"size": 8192},
    "tensor-core-alignment": {"size": 4096},
    "mixed-precision": {"steps": 2, "hidden": 4096, "layers": 4, "batch": 2048},
    "profiler": {"steps": 1, "hidden": 4096, "batch": 8192},
    "batching": {"batch": 64, "size": 1024},
}


def _estimate(exp_id: str, p: dict) -> int:
    from gpulab.experiments import (
        batching,
        dtypes,
        memory_layout,
        mixed_precision,
        profiler,
        tensor_core_alignment,
    )

    if exp_id == "dtypes":
        ds = list(dtypes.CHOICES)
        return dtypes.fit_bytes(p["size"], p["n"], ds, ("matmul", "elementwise"), host=False)
    if exp_id == "memory-layout":
        return memory_layout.fit_bytes(p["size"], host=False)
    if exp_id == "tensor-core-alignment":
        top = tensor_core_alignment.candidate_sizes(p["size"])[-1]
        return tensor_core_alignment.fit_bytes(top, ["fp16", "bf16"], host=False)
    if exp_id == "mixed-precision":
        feats = min(p["hidden"], 256)
        return mixed_precision.fit_bytes(p["hidden"], p["layers"], p["batch"], feats)
    if exp_id == "profiler":
        return profiler.fit_bytes(p["hidden"], p["batch"])
    return batching.device_bytes(p["batch"], p["size"])


@pytest.mark.parametrize("exp_id", sorted(FIT_PARAMS))
def test_fit_estimate_covers_the_runs_peak_allocation(exp_id, inventory, monkeypatch):
    """The refusal's estimate (inputs, outputs, verification temporaries) is at least what the
    run really allocates at its peak, as torch's allocator counts it."""
    import torch

    from gpulab.core import peaks as pk
    from gpulab.experiments.base import Context

    ctx = Context(inventory=inventory, quick=True)
    pk.load_or_measure(ctx, quick=True)  # calibrated first: not part of the run's peak
    torch.cuda.synchronize()
    torch.cuda.empty_cache()
    base = torch.cuda.memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    # Experiments reset the peak per contender for their own columns: keep one peak here.
    monkeypatch.setattr(torch.cuda, "reset_peak_memory_stats", lambda *a, **k: None)
    events: list[dict] = []
    final = run_job("f", exp_id, FIT_PARAMS[exp_id], inventory, events.append, quick=True)
    assert final == "result", events[-1]
    peak = torch.cuda.max_memory_allocated() - base
    estimate = _estimate(exp_id, FIT_PARAMS[exp_id])
    assert peak <= estimate, (exp_id, peak / 2**20, estimate / 2**20)


def test_bandwidth_pcie_rows_use_the_calibrated_pinned_copies(inventory):
    events: list[dict] = []
    params = {"min_size": "1Mi", "max_size": "64Mi"}
    final = run_job("b", "bandwidth", params, inventory, events.append, quick=True)
    assert final == "result", events[-1]
    result = events[-1]["result"]
    for m in result["measurements"]:
        if m["contender"].startswith(("h2d", "d2h")):
            d = m["contender"][:3].upper()
            assert m["peak_name"] == f"pinned {d} copy (calibrated)"
            assert m["percent_of_peak"] is not None
    s = result["summary"]
    assert s["h2d_pinned_peak_gbs"] > 1 and s["d2h_pinned_peak_gbs"] > 1


def test_kernel_fusion_elementwise_output_is_poisoned(inventory, monkeypatch):
    if not cupy_available():
        pytest.skip("needs CuPy")
    import cupy

    class WritesNothing:  # a "kernel" that returns its output untouched
        def __init__(self, *a, **k):
            pass

        def __call__(self, x, y):
            return y

    monkeypatch.setattr(cupy, "ElementwiseKernel", WritesNothing)
    events: list[dict] = []
    params = {"n": 1_000_000, "compile": False}
    final = run_job("k", "kernel-fusion", params, inventory, events.append, quick=True)
    assert final == "result", events[-1]
    verdicts = {v["contender"]: v for v in events[-1]["result"]["verdicts"]}
    assert not verdicts["cupy-elementwise"]["passed"]  # NaN where it wrote nothing
    assert verdicts["cupy-eager"]["passed"] and verdicts["torch-eager"]["passed"]


def test_our_reduction_module_is_cached_per_device():
    if not cupy_available():
        pytest.skip("needs CuPy")
    from gpulab.experiments.reduction import OurKernel

    a, b = OurKernel(0), OurKernel(0)
    assert 0 in OurKernel._modules and a.fn is not None and b.fn is not None
