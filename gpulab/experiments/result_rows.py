"""A result's rows: a Timing made a Measurement, a row emitted, which contenders run, sizes."""

from __future__ import annotations

from typing import Any

from gpulab.core.noise import noisy_note
from gpulab.core.results import Measurement, Result
from gpulab.core.timing import Timing
from gpulab.experiments.base import Context


def row(
    contender: str,
    size: str,
    timing: Timing,
    *,
    work: float | None = None,
    unit: str = "",
    scale: float = 1.0,
    dtype: str = "",
    peak: float | None = None,
    peak_name: str = "",
    **extra: Any,
) -> Measurement:
    """`work` units done per call (bytes, flops, samples); throughput = work / median / scale.

    `peak` is in the same unit as the throughput; percent_of_peak is filled when it is known.
    A calibrated ceiling (`peaks.Ceiling`) stays attached to the row, so `Context.measurement`
    can re-measure it when the row beats it by more than 5%. A timing whose runs spread wildly
    even after the timer took them twice (`Timing.noisy`) is flagged here, for every experiment:
    `extra["noisy"]` and a note saying what else was using the machine.
    """
    throughput = None
    if work is not None and timing.median_s > 0:
        throughput = work / timing.median_s / scale
    pct = None
    if throughput is not None and peak:
        pct = 100.0 * throughput / peak
    note = extra.pop("note", "")
    if timing.remeasured:
        extra["remeasured"] = True
    if timing.noisy:
        extra["noisy"] = True
        extra["spread"] = timing.spread
        flag = noisy_note(timing, gpu=timing.method == "cuda-events")
        note = f"{note}; {flag}" if note else flag
    m = Measurement(
        contender=contender,
        size=size,
        dtype=dtype,
        time_median_s=timing.median_s,
        time_min_s=timing.min_s,
        time_max_s=timing.max_s,
        runs=timing.runs,
        throughput=throughput,
        unit=unit,
        percent_of_peak=pct,
        peak_name=peak_name,
        cold_s=timing.cold_s,
        note=note,
        extra=extra,
    )
    if pct is not None and hasattr(peak, "peaks"):
        m._ceiling = peak  # type: ignore[attr-defined]  # not a field: never serialised
    return m


def emit(ctx: Context, result: Result, m: Measurement) -> Measurement:
    """Send the row to the UI and keep it in the result; the row."""
    ctx.measurement(m)
    result.measurements.append(m)
    return m


def todo(exp: Any, result: Result, ids: tuple[str, ...] | None = None) -> list[Any]:
    """The contenders that can run here (optionally only those named), in declared order."""
    return [
        c for c in exp.contenders if c.id not in result.unavailable and (ids is None or c.id in ids)
    ]


def size_label(nbytes: float) -> str:
    """A byte count as B, KiB, MiB or GiB: whole numbers bare, others to one decimal."""
    for unit, factor in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if nbytes >= factor:
            value = nbytes / factor
            return f"{value:g} {unit}" if value == int(value) else f"{value:.1f} {unit}"
    return f"{int(nbytes)} B"
