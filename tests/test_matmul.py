"""Matmul race: CPU contenders verified, Python extrapolated past 128, events per step."""

from __future__ import annotations

import pytest
from headline_checks import assert_headline

from gpulab.core.devices import detect
from gpulab.core.errors import Cancelled
from gpulab.experiments import matmul as mm
from gpulab.experiments import matmul_contenders as mmc
from gpulab.experiments.base import Context
from gpulab.experiments.wording import times


def _run(events=None, cancel=None, **params):
    exp = mm.EXPERIMENT
    ctx = Context(
        inventory=detect(),
        quick=True,
        on_measurement=(events.append if events is not None else None),
        is_cancelled=cancel,
    )
    return exp.run(ctx, exp.params.validate(params))


def test_cpu_contenders_verified_and_python_extrapolated():
    events = []
    res = _run(
        events,
        sizes=[32, 256],
        dtypes=["fp32", "fp64"],
        contenders=["python", "numpy", "torch-cpu"],
    )
    assert res.passed, [v for v in res.verdicts if not v.passed]
    rows = {(m.contender, m.size, m.dtype): m for m in res.measurements}
    # Python: measured at 32 (asked), 64 and 128 (always); 256 extrapolated and marked so.
    for n in ("32", "64", "128"):
        assert not rows[("python", n, "fp64")].extrapolated
    ext = rows[("python", "256", "fp64")]
    assert ext.extrapolated and ext.runs == 0
    assert ext.time_median_s == pytest.approx(rows[("python", "128", "fp64")].time_median_s * 8)
    for c in ("numpy", "torch-cpu"):
        for d in ("fp32", "fp64"):
            m = rows[(c, "256", d)]
            assert m.throughput > 0 and m.extra["rel_error"] < mmc.TOLERANCE[d]
    assert len(events) == len(res.measurements)  # one event per finished step
    assert any(s.name.startswith("torch-cpu") for s in res.series)
    assert_headline("matmul", res.to_dict())


def test_torch_cpu_rows_are_not_judged_against_numpys_ceiling():
    res = _run(sizes=[64, 128], dtypes=["fp32"], contenders=["numpy", "torch-cpu"])
    assert res.passed
    for m in res.measurements:
        if m.contender == "torch-cpu":
            assert m.percent_of_peak is None and m.peak_name == ""
        else:
            assert m.percent_of_peak is not None and m.peak_name == "calibrated matmul fp32"
            # Judged on the way out (a row above 105% has its ceiling re-measured, once per
            # figure and process), and again at the end: any row still above 100% says why.
            assert m.percent_of_peak <= 100 or m.extra.get("ceiling_note"), m
            assert m.extra["ceiling"] == res.measurements[0].extra["ceiling"]  # one ceiling


def test_inputs_are_fresh_every_run_and_the_seed_is_recorded():
    args = {"sizes": [32], "dtypes": ["fp32"], "contenders": ["numpy"]}
    a, b = _run(**args), _run(**args)
    assert a.summary["seed"] and b.summary["seed"] and a.summary["seed"] != b.summary["seed"]
    assert a.measurements[0].extra["seed"] != b.measurements[0].extra["seed"]
    # A given seed reproduces the inputs: the same error to the last bit.
    c, d = _run(seed=1234, **args), _run(seed=1234, **args)
    assert c.summary["seed"] == d.summary["seed"] == 1234
    assert c.measurements[0].extra["seed"] == d.measurements[0].extra["seed"]
    assert c.measurements[0].extra["rel_error"] == d.measurements[0].extra["rel_error"]
    # Each (contender, dtype, n) step draws its own inputs.
    assert len({mm.Matmul.step_seed(7, "numpy", "fp32", n) for n in (32, 64)}) == 2
    assert mm.Matmul.step_seed(7, "numpy", "fp32", 32) != mm.Matmul.step_seed(
        7, "torch", "fp32", 32
    )


def test_bf16_on_the_cpu_is_checked_at_the_measured_tolerance():
    res = _run(sizes=[64, 200], dtypes=["bf16"], contenders=["torch-cpu"])
    assert res.passed, [v for v in res.verdicts if not v.passed]
    assert all(v.tolerance == 1e-2 for v in res.verdicts)


def test_relative_error_catches_wrong_results():
    import numpy as np

    a = np.random.default_rng(0).standard_normal((8, 8))
    ref = a @ a
    assert mmc.rel_error(ref, ref) == 0
    assert mmc.rel_error(ref * (1 + 1e-3), ref) == pytest.approx(1e-3)
    bad = ref.copy()
    bad[0, 0] = np.nan
    assert mmc.rel_error(bad, ref) == float("inf")


def test_python_matmul_is_right():
    assert mmc.python_matmul([[1, 2], [3, 4]], [[5, 6], [7, 8]]) == [[19, 22], [43, 50]]


def test_unsupported_dtypes_are_reported_not_dropped():
    res = _run(sizes=[32], dtypes=["bf16"], contenders=["numpy"])
    assert "numpy has no bf16 matmul" in res.summary["skipped"]


def test_cancel_stops_between_steps():
    calls = {"n": 0}

    def cancel():
        calls["n"] += 1
        return calls["n"] > 3

    with pytest.raises(Cancelled):
        _run(cancel=cancel, sizes=[32, 64, 128], dtypes=["fp32"], contenders=["numpy"])


@pytest.mark.gpu
@pytest.mark.alone
def test_gpu_contenders_per_dtype():
    res = _run(sizes=[512, 1024], dtypes=list(mm.DTYPES), contenders=["torch", "cupy"])
    assert res.passed, [v for v in res.verdicts if not v.passed]
    got = {(m.contender, m.dtype) for m in res.measurements}
    assert {("torch", d) for d in mm.DTYPES} <= got


@pytest.mark.gpu
@pytest.mark.alone
def test_gpu_headline_is_the_lead_over_numpy_at_the_largest_size():
    """The fastest row (torch back to back at n=1024), its share of the calibrated matmul, and
    how far ahead of the slowest row of the same work (NumPy at n=1024) it was."""
    res = _run(sizes=[256, 1024], dtypes=["fp32"], contenders=["numpy", "torch"])
    rows = [m for m in res.measurements if not m.extrapolated and m.time_median_s > 0]
    best = max(rows, key=lambda m: m.throughput or 0.0)
    slow = max(rows, key=lambda m: m.time_median_s)
    assert best.contender.startswith("torch") and best.size == slow.size == "1024"
    assert slow.contender == "numpy"
    numpy = next(c.label for c in mm.EXPERIMENT.contenders if c.id == "numpy")
    lead = slow.time_median_s / best.time_median_s
    assert res.headline.startswith("fastest: torch")
    assert f"% of calibrated matmul fp32; {times(lead)} faster than {numpy}" in res.headline


@pytest.mark.gpu
@pytest.mark.alone
def test_too_big_is_refused_before_running():
    from gpulab.experiments.base import DoesNotFit

    with pytest.raises(DoesNotFit, match="GiB is free"):
        mm.Matmul._check_fits(Context(inventory=detect()), [1_000_000], ["fp64"])
    with pytest.raises(DoesNotFit, match="matmul cupy fp16 n=200000"):
        mm.Matmul._check_fits(Context(inventory=detect()), [200_000], ["fp16"], ["torch", "cupy"])


@pytest.mark.gpu
@pytest.mark.alone
@pytest.mark.parametrize("dtype", ["fp32", "tf32", "fp16", "bf16"])
def test_gpu_estimate_covers_what_a_torch_step_allocates(dtype):
    import torch

    from gpulab.core import peaks as pk

    ctx = Context(inventory=detect(), quick=True)
    pk.load_or_measure(ctx, quick=True)  # calibrated first: not counted in the step's peak
    pk.load_or_measure(ctx, quick=True, cpu=True)
    n = 4096
    torch.cuda.synchronize()
    torch.cuda.empty_cache()
    base = torch.cuda.memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    res = _run(sizes=[n], dtypes=[dtype], contenders=["torch"])
    assert res.passed, res.verdicts
    peak = torch.cuda.max_memory_allocated() - base
    assert peak <= mm.Matmul.gpu_bytes(n, dtype, "torch"), (peak, dtype)
    # The check took B a block of columns at a time: no second n x n array on the GPU.
    assert peak < 3 * mm.BYTES[dtype] * n * n + 3 * mm.verification.CHUNK * 8 + 64 * 2**20, peak


@pytest.mark.gpu
@pytest.mark.alone
def test_gpu_rows_carry_the_calibrated_percent_and_a_seed():
    res = _run(sizes=[2048], dtypes=["bf16"], contenders=["torch", "cupy"])
    assert res.passed
    torch_row = next(m for m in res.measurements if m.contender == "torch")
    assert torch_row.peak_name == "calibrated matmul bf16"
    assert 0 < torch_row.percent_of_peak <= 105 or torch_row.extra.get("ceiling_remeasured")
    assert torch_row.extra["seed"] and res.summary["seed"]


@pytest.mark.gpu
@pytest.mark.alone
def test_long_gpu_matmuls_are_timed_sustained_short_ones_single():
    # fp32 n=4096 takes milliseconds (sustained regime, like the calibration); n=256 microseconds.
    res = _run(sizes=[256, 4096], dtypes=["fp32"], contenders=["torch"])
    assert res.passed
    by = {m.size: m for m in res.measurements if m.contender == "torch"}
    assert by["4096"].extra["regime"].startswith("sustained")
    assert by["4096"].cold_s is None  # no cold call in the steady state
    assert by["256"].extra["regime"] == "single calls"
    assert "launch latency included" in by["256"].note
    # The short product is also timed back to back: the throughput regime, faster per call.
    b2b = {m.size: m for m in res.measurements if m.contender == "torch back-to-back"}
    assert set(b2b) == {"256"}  # the long one has a single (sustained) row
    assert b2b["256"].extra["regime"].startswith("sustained")
    assert b2b["256"].time_median_s < by["256"].time_median_s
    assert "launch latency hidden" in b2b["256"].note


@pytest.mark.gpu
@pytest.mark.alone
def test_benchmark_timer_second_opinion_runs():
    tflops = mm.benchmark_timer_tflops(1024, "fp16", min_run_time=0.1, warm_s=0.05)
    assert tflops > 0.1
