"""The words of a headline (`Experiment.headline`, each experiment's one-line answer): ratios,
rates and durations as a person compares them, contender labels, and the lines more than one
experiment says (the fastest row, a streaming rate, a habit's gain on the GPU or its CPU time).

Every figure comes from the run, never from a constant; where the run has too little to say
(every GPU row unavailable), the line says what it did measure.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from gpulab.core.results import Measurement, Result
from gpulab.render.results import fmt_time

GPU_BACKENDS = ("torch-cuda", "cupy")


def times(ratio: float) -> str:
    """73x, 4.2x, 1.05x: as many digits as a person needs to compare."""
    if ratio >= 10:
        return f"{ratio:.0f}x"
    if ratio >= 1.995:
        return f"{ratio:.1f}x"
    return f"{ratio:.2f}x"


def rate(m: Measurement) -> str:
    """The row's throughput with its unit, or empty."""
    return f"{m.throughput:.3g} {m.unit}".strip() if m.throughput is not None else ""


def duration(seconds: float) -> str:
    """A duration in s, ms or us."""
    return fmt_time(seconds)


def label(exp: Any, contender: str) -> str:
    """The contender's label, or its id."""
    return next((c.label for c in exp.contenders if c.id == contender), contender)


def backend(exp: Any, contender: str) -> str:
    """The contender's backend, or empty."""
    return next((c.backend for c in exp.contenders if c.id == contender), "")


def measured(result: Result) -> list[Measurement]:
    """The rows really measured (not extrapolated, nonzero time)."""
    return [m for m in result.measurements if not m.extrapolated and m.time_median_s > 0]


def fastest(rows: Iterable[Measurement]) -> Measurement | None:
    """By throughput where rows have one (same work), else by time."""
    rows = list(rows)
    with_rate = [m for m in rows if m.throughput]
    if with_rate:
        return max(with_rate, key=lambda m: m.throughput or 0.0)
    return min(rows, key=lambda m: m.time_median_s, default=None)


def of_peak(m: Measurement, what: str = "") -> str:
    """', N% of <ceiling>' for a row that has a percent of peak, else empty."""
    if m.percent_of_peak is None:
        return ""
    return f", {m.percent_of_peak:.0f}% of {what or m.peak_name or 'its ceiling'}"


def generic(exp: Any, result: Result) -> str:
    """The fastest row, its rate and % of peak, and how far ahead of the slowest it was."""
    rows = measured(result)
    best = fastest(rows)
    if best is None:
        return f"{exp.title}: nothing was measured here"
    text = f"fastest: {label(exp, best.contender)}"
    text += f" at {rate(best)}" if best.throughput else f" in {duration(best.time_median_s)}"
    text += of_peak(best)
    slow = max(rows, key=lambda m: m.time_median_s)
    same_work = slow.size == best.size and slow.dtype == best.dtype
    if slow is not best and same_work and best.time_median_s > 0:
        ratio = slow.time_median_s / best.time_median_s
        text += f"; {times(ratio)} faster than {label(exp, slow.contender)}"
    return text


def streaming(exp: Any, result: Result) -> str:
    """The headline of memory-bound work (vector-add, reduction, kernel-fusion without fused
    rows): the best GB/s, its share of the copy ceiling, the lead over NumPy."""
    rows = [m for m in measured(result) if m.unit == "GB/s"]
    best = fastest(rows)
    if best is None:
        return ""
    text = f"{label(exp, best.contender)} streamed {rate(best)}"
    text += of_peak(best, "the copy bandwidth")
    numpy = next((m for m in rows if m.contender == "numpy" and m.size == best.size), None)
    if numpy is not None and numpy is not best and numpy.throughput:
        ratio = best.throughput / numpy.throughput  # type: ignore[operator]  # best has one
        text += f"; {times(ratio)} NumPy's rate"
    return text


def on_gpu_else_cpu(
    s: dict[str, Any],
    ratio_key: str,
    gpu_line: str,
    cpu_time: tuple[str, str],
    cpu_line: Callable[[str], str],
) -> str:
    """`gpu_line` with the summary's GPU ratio (`{x}`) when the GPU rows ran; else `cpu_line` of
    the CPU's time, s[cpu_time[0]][cpu_time[1]], and why the GPU's half is missing."""
    if s.get(ratio_key):
        return gpu_line.format(x=times(s[ratio_key]))
    t = (s.get(cpu_time[0]) or {}).get(cpu_time[1])
    if t:
        return f"{cpu_line(duration(t))} (the GPU rows need a GPU)"
    return ""
