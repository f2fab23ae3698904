import json
import math
import time

import pytest

from gpulab.core.results import Artifact, Measurement, Result, RunRecord, Series, Verdict
from gpulab.core.timing import Timer


def test_result_roundtrips_through_json():
    r = Result(record=RunRecord(experiment="x", params={"n": 3}, device="cpu"))
    r.measurements.append(
        Measurement("numpy", "1M", 0.1, 0.09, 0.2, 5, throughput=float("inf"), unit="GB/s")
    )
    r.verdicts.append(Verdict.check("numpy", 1e-7, 1e-5))
    r.series.append(Series("err", [1, 2], [0.5, 0.25], log_x=True))
    r.artifacts.append(Artifact("out", "image", path="/tmp/x.png"))
    text = json.dumps(r.to_dict())
    back = Result.from_dict(json.loads(text))
    assert back.measurements[0].throughput is None  # inf is not JSON: it becomes null
    assert back.verdicts[0].passed and back.passed
    assert back.series[0].log_x and back.artifacts[0].kind == "image"
    assert back.record.params == {"n": 3}


def test_verdict_fails_on_nan_and_large_error():
    assert not Verdict.check("c", float("nan"), 1.0).passed
    assert not Verdict.check("c", 2.0, 1.0).passed
    assert Verdict.check("c", 1.0, 1.0).passed


def test_timer_separates_cold_from_warm():
    calls = []

    def fn():
        calls.append(1)
        time.sleep(0.05 if len(calls) == 1 else 0.002)

    t = Timer(warmup=2, repeats=10, budget_s=5).measure(fn)
    assert t.cold_s is not None and t.cold_s >= 0.05
    assert t.median_s < 0.02
    assert t.runs == 10 and len(t.times_s) == 10
    assert t.min_s <= t.median_s <= t.max_s
    assert t.method == "perf_counter"


def test_timer_budget_stops_early_but_keeps_min_runs():
    t = Timer(warmup=0, repeats=1000, budget_s=0.05, min_runs=3).measure(
        lambda: time.sleep(0.02), cold=False
    )
    assert 3 <= t.runs < 20
    assert t.cold_s is None


def test_timer_before_is_untimed_and_cancel_is_checked():
    t = Timer(warmup=0, repeats=3, budget_s=5).measure(
        lambda: None, before=lambda: time.sleep(0.02), cold=False
    )
    assert t.median_s < 0.01

    class Stop(Exception):
        pass

    n = {"k": 0}

    def check():
        n["k"] += 1
        if n["k"] > 2:
            raise Stop

    with pytest.raises(Stop):
        Timer(warmup=0, repeats=100, budget_s=5, cancel_check=check).measure(lambda: None)


def test_timer_rejects_unknown_sync():
    with pytest.raises(ValueError):
        Timer().measure(lambda: None, sync="opencl")


def test_timer_inner_divides():
    t = Timer(warmup=0, repeats=3).measure(lambda: time.sleep(0.01), inner=4, cold=False)
    assert math.isclose(t.median_s, 0.01, rel_tol=0.5)


@pytest.mark.gpu
@pytest.mark.alone
@pytest.mark.parametrize("backend", ["torch", "cupy"])
def test_timer_uses_cuda_events_and_times_the_device_work(backend):
    """A sleep on the GPU (no host cost) is what the events see: the launch returns at once."""
    from conftest import cupy_available

    if backend == "torch":
        import torch

        def sleep_on_gpu():
            torch.cuda._sleep(20_000_000)  # GPU clock cycles: ~10 ms at 2 GHz
    else:
        if not cupy_available():
            pytest.skip("needs CuPy")
        import cupy

        spin = cupy.RawKernel(
            r"""extern "C" __global__ void spin(long long cycles) {
                long long t0 = clock64(); while (clock64() - t0 < cycles) {} }""",
            "spin",
        )

        def sleep_on_gpu():
            spin((1,), (1,), (cupy.int64(20_000_000),))

    t = Timer(warmup=1, repeats=5, budget_s=5).measure(sleep_on_gpu, sync=backend)
    assert t.method == "cuda-events"
    # 20M cycles at any clock from 1 to 2.5 GHz: 8 to 20 ms of device time, however fast
    # the host returned from the launch.
    assert 0.006 < t.median_s < 0.03, t
    assert t.cold_s is not None and t.cold_s >= t.min_s * 0.9
