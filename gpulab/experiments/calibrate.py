"""Calibrate: measure this device's ceilings (the denominators of every "% of peak").

Runs `core.peaks.load_or_measure`: a large device-to-device copy, cuBLAS matmul per dtype and
pinned host<->device copies on a GPU; a NumPy memory copy and NumPy matmul on the CPU. Cached per
device, so other experiments reuse it; `remeasure=true` (the default here) measures again.
"""

from __future__ import annotations

from typing import Any

from gpulab.core import peaks as pk
from gpulab.core.params import Bool, ParamSet
from gpulab.core.results import Measurement, Result
from gpulab.experiments.base import Contender, Context, Experiment


class Calibrate(Experiment):
    """The `calibrate` experiment: Measure this device's copy bandwidth, matmul TFLOP/s per dtype
    and PCIe copies."""

    id = "calibrate"
    title = "Calibrate this device"
    summary = "Measure this device's copy bandwidth, matmul TFLOP/s per dtype and PCIe copies."
    lesson = "performance-regimes"
    params = ParamSet(
        (
            Bool("remeasure", True, "measure again even when a calibration is cached"),
            Bool("cpu", False, "calibrate the CPU even when a GPU is present"),
        )
    )
    contenders = (Contender("peaks", "calibration", "numpy"),)

    def run(self, ctx: Context, params: dict[str, Any]) -> Result:
        """Measure this device's ceilings (or read them from the cache) into a Result whose
        summary holds them."""
        result = self.new_result(ctx, params)
        ctx.progress(0.0, "measuring this device's ceilings")
        peaks = pk.load_or_measure(
            ctx, remeasure=bool(params["remeasure"]), quick=ctx.quick, cpu=bool(params["cpu"])
        )
        for name, value, unit in pk.summary_rows(peaks):
            m = Measurement(
                contender=name,
                size="",
                time_median_s=0.0,
                time_min_s=0.0,
                time_max_s=0.0,
                runs=0,
                throughput=value,
                unit=unit,
                note="calibration",
            )
            ctx.measurement(m)
            result.measurements.append(m)
        result.summary = {"peaks": peaks.to_dict(), "cache": str(pk.cache_path(peaks.key))}
        result.explanation = (
            "These are the ceilings this device actually reaches, measured with the same timer "
            "as every experiment. A memory-bound kernel is judged against the copy bandwidth, a "
            "matrix product against cuBLAS for its dtype, and a transfer against the pinned "
            "PCIe figure. Datasheet numbers are higher: no program reaches them."
        )
        ctx.progress(1.0, "done")
        return self.finish(result)

    def headline(self, result: Result) -> str:
        """One line: the copy, pinned-transfer and matmul ceilings just measured."""
        p = result.summary.get("peaks") or {}
        what = "this CPU" if p.get("cpu") else "this GPU"
        parts = []
        if p.get("copy_gbs"):
            parts.append(f"copies at {p['copy_gbs']:.3g} GB/s")
        tflops = p.get("matmul_tflops") or {}
        if tflops:
            dtype, best = max(tflops.items(), key=lambda kv: kv[1] or 0)
            parts.append(f"multiplies matrices at {best:.3g} TFLOP/s ({dtype})")
        if p.get("h2d_pinned_gbs"):
            parts.append(f"takes {p['h2d_pinned_gbs']:.3g} GB/s from the host")
        return f"{what} " + ", ".join(parts) if parts else ""


EXPERIMENT = Calibrate()
