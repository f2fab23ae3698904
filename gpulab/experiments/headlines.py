"""Each experiment's one-line answer (`Result.headline`), computed from its own rows and summary.

One function per experiment id: the experiment decides what its answer is (pi and its error, a
speedup, a % of a ceiling). Every figure comes from the run, never from a constant; where the
run has too little to say (every GPU row unavailable), the line says what it did measure.
`Experiment.finish` calls `headline()`; a bug here costs the line, never the run.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from gpulab.core.results import Measurement, Result

Headline = Callable[[Any, Result], str]
_BY_ID: dict[str, Headline] = {}
GPU_BACKENDS = ("torch-cuda", "cupy")


def headline(exp: Any, result: Result) -> str:
    """The experiment's answer, or the generic one (its fastest row) when it has none."""
    maker = _BY_ID.get(exp.id, generic)
    try:
        text = maker(exp, result)
    except Exception:  # noqa: BLE001 - a missing figure must not sink a finished run
        text = ""
    return text or generic(exp, result)


def _for(*ids: str) -> Callable[[Headline], Headline]:
    def register(fn: Headline) -> Headline:
        for i in ids:
            _BY_ID[i] = fn
        return fn

    return register


# ---- formatting ------------------------------------------------------------------------------


def times(ratio: float) -> str:
    """73x, 4.2x, 1.05x: as many digits as a person needs to compare."""
    if ratio >= 10:
        return f"{ratio:.0f}x"
    if ratio >= 1.995:
        return f"{ratio:.1f}x"
    return f"{ratio:.2f}x"


def rate(m: Measurement) -> str:
    return f"{m.throughput:.3g} {m.unit}".strip() if m.throughput is not None else ""


def duration(seconds: float) -> str:
    from gpulab.render.results import fmt_time

    return fmt_time(seconds)


def label(exp: Any, contender: str) -> str:
    return next((c.label for c in exp.contenders if c.id == contender), contender)


def backend(exp: Any, contender: str) -> str:
    return next((c.backend for c in exp.contenders if c.id == contender), "")


def measured(result: Result) -> list[Measurement]:
    return [m for m in result.measurements if not m.extrapolated and m.time_median_s > 0]


def fastest(rows: Iterable[Measurement]) -> Measurement | None:
    """By throughput where rows have one (same work), else by time."""
    rows = list(rows)
    with_rate = [m for m in rows if m.throughput]
    if with_rate:
        return max(with_rate, key=lambda m: m.throughput or 0.0)
    return min(rows, key=lambda m: m.time_median_s, default=None)


def of_peak(m: Measurement, what: str = "") -> str:
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


# Each experiment's headline lives with its kind (imported last: they register through `_for`).
from gpulab.experiments import (  # noqa: E402, F401
    headlines_claims,
    headlines_habits,
    headlines_multi_gpu,
    headlines_races,
)
