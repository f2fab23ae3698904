"""Calibration: CPU measurement, cache keying, re-measuring, and reading without torch."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from gpulab.core import peaks as pk
from gpulab.core.calibration import CUPY_DTYPES
from gpulab.core.devices import DeviceInfo, Inventory
from gpulab.core.timing import sustained_kw
from gpulab.experiments.base import Context

pytestmark = pytest.mark.uncalibrated  # each test measures in a data dir of its own


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
@pytest.mark.alone
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
    assert sustained_kw(fn, lambda: None, 0.02) == {}
    assert calls["n"] >= 4  # it did run back to back (untimed) for the warm-up
    # Forced: rows compared with the calibration are all timed in the steady state.
    kw = sustained_kw(fn, lambda: None, 0.02, min_call_s=0.0)
    assert kw == {"inner": 50, "warmup": 0, "cold": False}
    # A long call gets `inner` sized to ~30 ms a sample.
    import time

    kw = sustained_kw(lambda: time.sleep(0.006), lambda: None, 0.02)
    assert kw["cold"] is False and 1 <= kw["inner"] <= 5


# ---------------------------------------------------------------------------- best of, re-checks


def test_cpu_ceilings_are_the_best_of_several_runs(monkeypatch):
    from gpulab.core import timing

    def fake_measure(self, fn, **kw):
        fn()
        return timing.Timing(
            median_s=2.0, min_s=1.0, max_s=3.0, runs=5, cold_s=None, method="perf_counter"
        )

    monkeypatch.setattr(timing.Timer, "measure", fake_measure)
    p = pk.load_or_measure(_cpu_ctx(), quick=True)
    n = 256  # the quick calibration's matmul size
    assert p.matmul_tflops["fp32"] == pytest.approx(2 * n**3 / 1.0 / 1e12)  # min, not median
    assert p.copy_gbs == pytest.approx(p.detail["copy"]["bytes"] / 1.0 / 1e9)
    assert p.detail["matmul:fp32"]["statistic"] == "best of 5 runs"


def _stale(ctx: Context, fp32: float) -> pk.Peaks:
    p = pk.load_or_measure(ctx, quick=True)
    p.matmul_tflops["fp32"] = fp32
    pk._write(p)
    return pk.load_or_measure(ctx, quick=True)


def test_a_row_above_a_stale_ceiling_has_it_remeasured():
    from gpulab.core.timing import Timing
    from gpulab.experiments.result_rows import row

    ctx = _cpu_ctx()
    p = _stale(ctx, 1e-9)  # a ceiling far below anything this CPU does
    ceiling = pk.peak_for(p, "fp32")
    assert isinstance(ceiling, pk.Ceiling) and ceiling == 1e-9 and ceiling.what == "matmul:fp32"
    t = Timing(median_s=1.0, min_s=1.0, max_s=1.0, runs=1, cold_s=None, method="perf_counter")
    m = row("numpy", "64", t, work=2e3, unit="TFLOP/s", scale=1e12, peak=ceiling)
    assert m.percent_of_peak == pytest.approx(200.0)
    ctx.measurement(m)  # judged on the way out
    assert m.extra["ceiling_remeasured"] is True
    assert m.percent_of_peak < 100 * pk.OVER_CEILING
    assert "ceiling_note" not in m.extra
    cached = pk.cached(ctx.inventory, 0)
    assert cached.matmul_tflops["fp32"] > 1e-6  # the re-measured figure replaced the stale one
    assert "_ceiling" not in m.to_dict()


def test_remeasure_keeps_the_better_figure_and_runs_once(monkeypatch):
    ctx = _cpu_ctx()
    p = _stale(ctx, 123.0)  # better than this CPU can do now
    calls = []

    def slower(peaks, todo, *, quick, ctx):
        calls.append(todo)
        peaks.matmul_tflops["fp32"] = 1.0

    monkeypatch.setattr(pk, "_measure_cpu", slower)
    assert pk.remeasure(ctx, p, "fp32") is True
    assert p.matmul_tflops["fp32"] == 123.0  # the old, better figure stands
    assert pk.remeasure(ctx, p, "matmul:fp32") is False  # once per figure and process
    assert calls == [["matmul:fp32"]]


def test_a_row_still_above_after_remeasuring_says_so(monkeypatch):
    from gpulab.core.timing import Timing
    from gpulab.experiments.result_rows import row

    ctx = _cpu_ctx()
    p = _stale(ctx, 1.0)
    monkeypatch.setattr(pk, "_measure_cpu", lambda peaks, todo, *, quick, ctx: None)
    t = Timing(median_s=1.0, min_s=1.0, max_s=1.0, runs=1, cold_s=None, method="perf_counter")
    m = row("numpy", "8", t, work=2e12, unit="TFLOP/s", scale=1e12, peak=pk.peak_for(p, "fp32"))
    ctx.measurement(m)
    assert m.percent_of_peak == pytest.approx(200.0)  # honest, not capped
    assert "even after re-measuring it" in m.note and m.extra["ceiling_note"]


def test_cupy_alone_gets_a_gpu_calibration(monkeypatch):
    inv = Inventory(
        backends={
            "torch-cuda": pk_backend("torch-cuda", False),
            "cupy": pk_backend("cupy", True),
        },
        devices=[DeviceInfo(0, "NVIDIA H100", "cuda", uuid="GPU-cupy-only")],
        driver_version="580.1",
    )
    ctx = Context(inventory=inv, quick=True)
    seen = []

    def fake_cupy(peaks, todo, *, quick, ctx):
        seen.append(list(todo))
        peaks.copy_gbs, peaks.h2d_pinned_gbs, peaks.d2h_pinned_gbs = 2900.0, 55.0, 52.0
        for d in CUPY_DTYPES:
            peaks.matmul_tflops[d] = 100.0

    monkeypatch.setattr(pk, "_measure_gpu_cupy", fake_cupy)
    monkeypatch.setattr(pk, "_measure_gpu", lambda *a, **k: pytest.fail("torch has no CUDA here"))
    p = pk.load_or_measure(ctx, quick=True)
    assert not p.cpu and p.key.startswith("gpu-GPU-cupy-only")
    assert "matmul:bf16" not in seen[0] and "matmul:tf32" not in seen[0]  # CuPy has neither
    again = pk.load_or_measure(ctx, quick=True)
    assert again.copy_gbs == 2900.0 and len(seen) == 1  # cached: nothing measured again


def pk_backend(name: str, available: bool):
    from gpulab.core.devices import Backend

    return Backend(name, available, reason="" if available else "off")


def test_a_ceiling_that_cannot_be_remeasured_is_named_on_the_row(monkeypatch):
    from gpulab.core.timing import Timing
    from gpulab.experiments.result_rows import row

    ctx = _cpu_ctx()
    p = _stale(ctx, 1.0)

    def broken(peaks, todo, *, quick, ctx):
        peaks.matmul_tflops["fp32"] = 0.5  # half-written, then a failure
        raise RuntimeError("busy")

    monkeypatch.setattr(pk, "_measure_cpu", broken)
    t = Timing(median_s=1.0, min_s=1.0, max_s=1.0, runs=1, cold_s=None, method="perf_counter")
    m = row("numpy", "8", t, work=3e12, unit="TFLOP/s", scale=1e12, peak=pk.peak_for(p, "fp32"))
    ctx.measurement(m)
    assert p.matmul_tflops["fp32"] == 1.0  # restored
    assert m.percent_of_peak == pytest.approx(300.0)
    assert "could not be re-measured" in m.note and "ceiling_remeasured" not in m.extra


def test_calibrate_experiment_states_its_ceilings_in_its_headline():
    from headline_checks import assert_headline

    from gpulab.experiments.registry import get

    exp = get("calibrate")
    res = exp.run(_cpu_ctx(), exp.params.validate({"cpu": True}))
    assert_headline("calibrate", res.to_dict())


def test_ready_means_every_figure_cached_at_full_size():
    """`ready` tells a front end whether the first check would calibrate inside itself."""
    ctx = _cpu_ctx()
    assert not pk.ready(ctx.inventory, 0)
    p = pk.load_or_measure(ctx, quick=True)
    assert not pk.ready(ctx.inventory, 0)  # a test-sized calibration is measured again
    p.quick = False
    pk._write(p)
    assert pk.ready(ctx.inventory, 0)
    p.copy_gbs = None
    pk._write(p)
    assert not pk.ready(ctx.inventory, 0)
