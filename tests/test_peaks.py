"""Calibration: CPU measurement, cache keying, re-measuring, and reading without torch."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from gpulab.core import peaks as pk
from gpulab.core.devices import DeviceInfo, Inventory
from gpulab.experiments.base import Context


def _cpu_ctx() -> Context:
    return Context(inventory=Inventory(cpu="test", cpu_count=2), quick=True)


def test_cpu_calibration_measures_and_caches():
    ctx = _cpu_ctx()
    p = pk.load_or_measure(ctx, quick=True)
    assert p.cpu
    assert p.copy_gbs and 0.1 < p.copy_gbs < 10_000
    assert set(p.matmul_tflops) == {"fp32", "fp64"}
    assert all(0 < v < 1000 for v in p.matmul_tflops.values())
    assert p.missing() == []
    assert pk.cache_path(p.key).exists()
    again = pk.cached(ctx.inventory, 0)
    assert again is not None and again.copy_gbs == p.copy_gbs and again.measured_at == p.measured_at


def test_cached_value_is_reused_and_remeasure_replaces_it():
    ctx = _cpu_ctx()
    first = pk.load_or_measure(ctx, quick=True)
    second = pk.load_or_measure(ctx, quick=True)
    assert second.measured_at == first.measured_at
    third = pk.load_or_measure(ctx, quick=True, remeasure=True)
    assert third.measured_at > first.measured_at


def test_only_missing_figures_are_measured():
    ctx = _cpu_ctx()
    p = pk.load_or_measure(ctx, quick=True)
    data = p.to_dict()
    data["matmul_tflops"].pop("fp64")
    data["copy_gbs"] = 123.0  # a sentinel that a full re-measure would overwrite
    pk.cache_path(p.key).write_text(json.dumps(data))
    q = pk.load_or_measure(ctx, quick=True)
    assert q.copy_gbs == 123.0
    assert q.matmul_tflops.get("fp64")


def test_corrupt_cache_is_measured_again():
    ctx = _cpu_ctx()
    key = pk.device_key(ctx.inventory, 0)
    path = pk.cache_path(key)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("{not json")
    assert pk.cached(ctx.inventory, 0) is None
    assert pk.load_or_measure(ctx, quick=True).copy_gbs


def test_keys_separate_gpus_and_drivers():
    def inv(uuid: str, driver: str) -> Inventory:
        return Inventory(
            devices=[DeviceInfo(0, "NVIDIA H100", "cuda", uuid=uuid)], driver_version=driver
        )

    a = pk.device_key(inv("GPU-aaaa", "580.1"), 0)
    assert "GPU-aaaa" in a and "580.1" in a
    assert a != pk.device_key(inv("GPU-bbbb", "580.1"), 0)
    assert a != pk.device_key(inv("GPU-aaaa", "581.0"), 0)
    assert pk.device_key(inv("GPU-aaaa", "580.1"), 0, cpu=True).startswith("cpu-")
    assert pk.device_key(Inventory(), 0).startswith("cpu-")


def test_peak_for_names():
    p = pk.Peaks(key="k", device="d", cpu=False, copy_gbs=3000.0, h2d_pinned_gbs=55.0)
    p.matmul_tflops = {"bf16": 780.0}
    assert pk.peak_for(p, "copy") == 3000.0
    assert pk.peak_for(p, "h2d") == 55.0
    assert pk.peak_for(p, "d2h") is None
    assert pk.peak_for(p, "matmul:bf16") == pk.peak_for(p, "bf16") == 780.0
    assert pk.peak_for(p, "fp64") is None
    assert pk.peak_for(None, "copy") is None
    assert "d2h" in p.missing() and "h2d" not in p.missing() and "matmul:fp32" in p.missing()


def test_cached_does_not_import_torch(tmp_path):
    code = (
        "import sys\n"
        "from gpulab.core.peaks import cached\n"
        "from gpulab.core.devices import Inventory\n"
        "cached(Inventory(), 0)\n"
        "print('torch' in sys.modules, 'cupy' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["False", "False"]


def test_calibrate_experiment_reports_figures():
    from gpulab.experiments.calibrate import EXPERIMENT

    ctx = _cpu_ctx()
    res = EXPERIMENT.run(ctx, EXPERIMENT.params.validate({}))
    units = {m.unit for m in res.measurements}
    assert units == {"GB/s", "TFLOP/s"}
    assert res.summary["peaks"]["cpu"] is True


@pytest.mark.gpu
def test_gpu_calibration_quick():
    from gpulab.core.devices import detect

    ctx = Context(inventory=detect(), quick=True)
    p = pk.load_or_measure(ctx, quick=True)
    assert not p.cpu and p.missing() == []
    assert p.copy_gbs > 100 and p.h2d_pinned_gbs > 1 and p.d2h_pinned_gbs > 1
    assert p.matmul_tflops["bf16"] > p.matmul_tflops["fp32"]


def test_sustained_kw_regimes():
    calls = {"n": 0}

    def fn() -> None:
        calls["n"] += 1

    # A call far under 0.5 ms stays a single call (empty kwargs): launch latency is the lesson.
    assert pk.sustained_kw(fn, lambda: None, 0.02) == {}
    assert calls["n"] >= 4  # it did run back to back (untimed) for the warm-up
    # Forced: rows compared with the calibration are all timed in the steady state.
    kw = pk.sustained_kw(fn, lambda: None, 0.02, min_call_s=0.0)
    assert kw == {"inner": 50, "warmup": 0, "cold": False}
    # A long call gets `inner` sized to ~30 ms a sample.
    import time

    kw = pk.sustained_kw(lambda: time.sleep(0.006), lambda: None, 0.02)
    assert kw["cold"] is False and 1 <= kw["inner"] <= 5
