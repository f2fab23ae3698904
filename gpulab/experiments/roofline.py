"""A throughput-vs-size plot against the calibrated ceiling: the picture behind "% of peak".

One series per contender and dtype (measured rows only: an extrapolated guess is not a
throughput), and per dtype a flat `ceiling <dtype>` line at the calibrated peak that the rows
were judged against, recovered from a row's throughput and its percent of that peak.
"""

from __future__ import annotations

from collections.abc import Sequence

from gpulab.core.results import Result, Series


def ceiling_series(
    name: str,
    peak: float,
    xs: Sequence[float],
    x_label: str,
    y_label: str,
    *,
    log_x: bool = True,
    log_y: bool = True,
) -> Series:
    """A flat line at a calibrated `peak` across the x range of the rows it judged. `name`
    starts with "ceiling": the TUI and the text plots draw such a series as a line, in red."""
    return Series(name, [min(xs), max(xs)], [peak, peak], x_label, y_label, log_x, log_y)


def throughput_series(result: Result, x_label: str, *, log_y: bool = True) -> None:
    """Append the throughput lines and the ceilings to `result.series`."""
    lines: dict[str, list[tuple[float, float]]] = {}
    ceilings: dict[str, float] = {}
    unit = ""
    for m in result.measurements:
        if m.extrapolated or not m.throughput or m.throughput <= 0:
            continue
        try:
            x = float(m.size)
        except ValueError:
            continue  # a size that is not a number has no place on the axis
        unit = unit or m.unit
        lines.setdefault(f"{m.contender} {m.dtype}".strip(), []).append((x, m.throughput))
        if m.percent_of_peak and m.percent_of_peak > 0:
            ceilings.setdefault(m.dtype, m.throughput / (m.percent_of_peak / 100))
    if not lines:
        return
    xs = [x for pts in lines.values() for x, _ in pts]
    y_label = unit or "throughput"
    for name, pts in lines.items():
        pts.sort()
        result.series.append(
            Series(name, [p[0] for p in pts], [p[1] for p in pts], x_label, y_label, True, log_y)
        )
    for dtype, peak in ceilings.items():
        result.series.append(
            ceiling_series(f"ceiling {dtype} (calibrated)", peak, xs, x_label, y_label, log_y=log_y)
        )
