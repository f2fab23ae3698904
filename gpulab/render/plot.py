"""Small text plots of `Series` (one marker per series), for the CLI and the TUI.

Pure text: a list of lines of fixed width, so it prints in a terminal, fits in a Textual
Static and survives copy and paste. Log axes are honoured; points that cannot be placed on a
log axis (zero, negative, missing) are dropped and counted in the legend.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

MARKERS = "•x+o*#"
CEILING_MARK = "━"
MODEL_MARK = "·"
SPREAD_MARK = "│"
SPREAD_LEGEND = "95% interval of each median"


def _value(series: Any, key: str) -> Any:
    return series[key] if isinstance(series, dict) else getattr(series, key)


def _optional(series: Any, key: str, default: Any) -> Any:
    """A field results written before it existed lack (their dicts): `default` then."""
    return series.get(key, default) if isinstance(series, dict) else getattr(series, key, default)


def is_model(series: Any) -> bool:
    """A model's prediction (core.results.Series.model): drawn as a line, not points."""
    return bool(_optional(series, "model", False))


def spread(series: Any) -> list[tuple[float, float]]:
    """Each point's (lo, hi) spread, [] when the series has none."""
    lo, hi = _optional(series, "lo", None) or [], _optional(series, "hi", None) or []
    return list(zip(lo, hi, strict=False)) if len(lo) == len(hi) == len(_value(series, "y")) else []


def is_ceiling(series: Any) -> bool:
    """A calibrated ceiling (experiments.roofline.ceiling_series): drawn as a line, not points."""
    return str(_value(series, "name")).startswith("ceiling")


_SI = ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"))


def tick_label(v: float) -> str:
    """An axis label in the data's units: 256, 4096, 65.5k, 1M, 0.001 (never 2.56e3)."""
    if v == 0 or not math.isfinite(v):
        return "0" if v == 0 else str(v)
    a = abs(v)
    if a >= 1e4:
        for scale, suffix in _SI:
            if a >= scale:
                return f"{v / scale:.3g}{suffix}"
    if a >= 1:
        return f"{v:.4g}" if a < 1e4 else f"{v:.0f}"
    if a >= 1e-3:
        return f"{v:.3g}"
    text = f"{v:.2g}"
    return text.replace("e-0", "e-")


_fmt = tick_label


def _transform(values: Sequence[float | None], log: bool) -> list[float | None]:
    out: list[float | None] = []
    for v in values:
        if v is None or not math.isfinite(v) or (log and v <= 0):
            out.append(None)
        else:
            out.append(math.log10(v) if log else float(v))
    return out


def plot(series: Sequence[Any], width: int = 60, height: int = 12) -> str:
    """Render series (core.results.Series or their dicts) as text `width` columns wide."""
    if not series:
        return "(nothing to plot)"
    log_x = any(bool(_value(s, "log_x")) for s in series)
    log_y = any(bool(_value(s, "log_y")) for s in series)
    points: list[list[tuple[float, float]]] = []
    dropped = 0
    for s in series:
        xs = _transform(_value(s, "x"), log_x)
        ys = _transform(_value(s, "y"), log_y)
        pts = [(x, y) for x, y in zip(xs, ys, strict=False) if x is not None and y is not None]
        dropped += max(len(xs), len(ys)) - len(pts)
        points.append(pts)
    every = [p for pts in points for p in pts]
    if not every:
        return "(no plottable points)"
    x0, x1 = min(p[0] for p in every), max(p[0] for p in every)
    bounds = [p[1] for p in every] + [
        v for s in series for pair in spread(s) for v in _transform(pair, log_y) if v is not None
    ]
    y0, y1 = min(bounds), max(bounds)
    if x1 == x0:
        x0, x1 = x0 - 1, x1 + 1
    if y1 == y0:
        y0, y1 = y0 - 1, y1 + 1

    def shown(v: float, log: bool) -> str:
        return _fmt(10**v if log else v)

    top, bottom = shown(y1, log_y), shown(y0, log_y)
    margin = max(len(top), len(bottom)) + 1
    cols = max(8, width - margin - 1)
    rows = max(3, height)
    grid = [[" "] * cols for _ in range(rows)]

    def cell(x: float, y: float) -> tuple[int, int]:
        c = round((x - x0) / (x1 - x0) * (cols - 1))
        return rows - 1 - round((y - y0) / (y1 - y0) * (rows - 1)), c

    for i, pts in enumerate(points):
        if is_ceiling(series[i]) or is_model(series[i]):
            continue
        mark = MARKERS[i % len(MARKERS)]
        for x, y in pts:
            r, c = cell(x, y)
            grid[r][c] = mark
    # Spreads next, on the cells no point took: a bar through each point, from lo to hi.
    for s in series:
        xs = _transform(_value(s, "x"), log_x)
        for px, (lo, hi) in zip(xs, spread(s), strict=False):
            low, high = _transform([lo, hi], log_y)
            if px is None or low is None or high is None:
                continue
            top_row, c = cell(px, min(max(high, y0), y1))
            bottom_row = cell(px, min(max(low, y0), y1))[0]
            for r in range(top_row, bottom_row + 1):
                if grid[r][c] == " ":
                    grid[r][c] = SPREAD_MARK
    # Ceilings and models last, on the cells no point took: a point on the line stays visible.
    for s, pts in zip(series, points, strict=True):
        if not (is_ceiling(s) or is_model(s)):
            continue
        mark = CEILING_MARK if is_ceiling(s) else MODEL_MARK
        pts = sorted(pts)
        for (xa, ya), (xb, yb) in zip(pts, pts[1:], strict=False):
            ca, cb = cell(xa, ya)[1], cell(xb, yb)[1]
            for c in range(ca, cb + 1):
                t = (c - ca) / (cb - ca) if cb > ca else 0.0
                r = cell(xa, ya + t * (yb - ya))[0]
                if grid[r][c] == " ":
                    grid[r][c] = mark
    lines = []
    for r, cells in enumerate(grid):
        label = top if r == 0 else bottom if r == rows - 1 else ""
        lines.append(f"{label:>{margin - 1}} │" + "".join(cells))
    lines.append(" " * (margin - 1) + " └" + "─" * cols)
    left, right = shown(x0, log_x), shown(x1, log_x)
    gap = max(1, cols - len(left) - len(right))
    lines.append(" " * (margin + 1) + left + " " * gap + right)
    x_label = _value(series[0], "x_label") or "x"
    y_label = _value(series[0], "y_label") or "y"
    axes = f"x: {x_label}{' (log)' if log_x else ''}   y: {y_label}{' (log)' if log_y else ''}"
    lines.append(axes)
    legend = "  ".join(f"{_mark(s, i)} {_value(s, 'name')}" for i, s in enumerate(series))
    if any(spread(s) for s in series):
        legend += f"  {SPREAD_MARK} {SPREAD_LEGEND}"
    if dropped:
        legend += f"  ({dropped} point{'s' if dropped != 1 else ''} not plottable)"
    lines.append(legend)
    return "\n".join(line.rstrip() for line in lines)


def _mark(series: Any, i: int) -> str:
    if is_ceiling(series):
        return CEILING_MARK
    return MODEL_MARK if is_model(series) else MARKERS[i % len(MARKERS)]


def plot_groups(series: Sequence[Any], width: int = 72, height: int = 12) -> str:
    """One text plot per pair of axis labels (a speedup and a TFLOP/s never share an axis)."""
    groups: dict[tuple[str, str], list[Any]] = {}
    for s in series:
        groups.setdefault((_value(s, "x_label"), _value(s, "y_label")), []).append(s)
    return "\n\n".join(plot(g, width, height) for g in groups.values())
