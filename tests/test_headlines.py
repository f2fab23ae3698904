"""Headlines follow the rows (never a constant), survive JSON, and a broken one costs only the line.

Each experiment's own headline is checked where that experiment already runs in CPU mode
(headline_checks.assert_headline, from test_exp_syllabus, test_montecarlo, test_matmul,
test_blur, test_peaks); these tests use hand-made results.
"""

from __future__ import annotations

import json

from gpulab.core.results import Measurement, Result, RunRecord
from gpulab.experiments.base import Experiment
from gpulab.experiments.registry import all_experiments, get


def _row(contender: str, size: str, t: float, **kw) -> Measurement:
    return Measurement(contender, size, t, t, t, 3, **kw)


def _matmul(gpu_s: float, numpy_s: float, gpu_dtype: str = "bf16") -> Result:
    r = Result(RunRecord("matmul", {}))
    flops = 2 * 4096**3 / 1e12
    r.measurements = [
        _row("numpy", "4096", numpy_s, dtype="fp32", throughput=flops / numpy_s, unit="TFLOP/s"),
        _row("torch", "4096", gpu_s, dtype=gpu_dtype, throughput=flops / gpu_s, unit="TFLOP/s"),
    ]
    return r


def test_matmul_headline_is_computed_from_the_rows():
    exp = get("matmul")
    assert exp.answer(_matmul(0.01, 0.73)).startswith(
        "the GPU was 73x faster than NumPy (BLAS on the CPU) at n=4096"
    )
    assert "12x faster" in exp.answer(_matmul(0.01, 0.12))


def test_headline_round_trips_through_json():
    r = _matmul(0.01, 0.5)
    get("matmul").finish(r)
    assert "50x faster" in r.headline
    again = Result.from_dict(json.loads(json.dumps(r.to_dict())))
    assert again.headline == r.headline
    assert Result.from_dict({"record": {"experiment": "x", "params": {}}}).headline == ""


def test_a_failing_headline_falls_back_to_the_fastest_row(monkeypatch):
    exp = get("matmul")

    def broken(self, result):
        raise KeyError("figure")

    monkeypatch.setattr(type(exp), "headline", broken)
    line = exp.answer(_matmul(0.01, 0.5, gpu_dtype="fp32"))
    assert line.startswith("fastest: PyTorch GPU (cuBLAS) at 13.7 TFLOP/s")
    assert line.endswith("50x faster than NumPy (BLAS on the CPU)")


def test_every_experiment_that_returns_a_result_has_its_own_headline():
    # break-it never returns a result: each of its modes ends in the failure it demonstrates.
    generic = {i for i, e in all_experiments().items() if type(e).headline is Experiment.headline}
    assert generic == {"break-it"}


def test_montecarlo_headline_states_error_in_standard_errors():
    r = Result(RunRecord("montecarlo", {}))
    r.summary = {
        "estimate": 3.14161,
        "error": 1.73e-5,
        "standard_error": 1.6e-5,
        "samples_run": 10_000_000,
        "estimate_by": "torch",
    }
    line = get("montecarlo").answer(r)
    assert line.startswith("pi ≈ 3.141610 (error 1.7e-05, 1.1 standard errors)")


def test_matmul_lead_is_against_numpy_in_the_same_dtype():
    r = _matmul(0.001, 0.1, gpu_dtype="fp32")
    flops = 2 * 4096**3 / 1e12
    r.measurements.append(
        _row("numpy", "4096", 0.2, dtype="fp64", throughput=flops / 0.2, unit="TFLOP/s")
    )
    assert "was 100x faster than NumPy" in get("matmul").answer(r)
