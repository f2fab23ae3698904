"""The syllabus experiments' GPU paths (run with -m gpu on a machine with an NVIDIA GPU)."""

from __future__ import annotations

import pytest
from conftest import cupy_available

from gpulab.core.devices import detect
from gpulab.experiments import registry
from gpulab.runner.inline import run_job

pytestmark = pytest.mark.gpu

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


def test_memory_oom_recovers(inventory):
    events: list[dict] = []
    final = run_job("m", "memory", {"gib": 0.25, "hold_s": 0}, inventory, events.append, quick=True)
    assert final == "result"
    s = events[-1]["result"]["summary"]
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
