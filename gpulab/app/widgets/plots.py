"""Plots of a result's series in the TUI, drawn by textual-plot (braille, legends, resizing).

textual-plot has no log axis, so a log axis plots log10 of the data and a formatter labels
the ticks with the data's own values (256, 4K, 1M), never with exponents the learner must undo.
Series that share axis labels share a plot; each other pair of labels gets its own. A measured
point's spread is a thin vertical bar through it; a model's prediction is a dotted line.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.css.query import NoMatches
from textual.widgets import Static
from textual_plot import HiResMode, PlotWidget
from textual_plot.axis_formatter import AxisFormatter, NumericAxisFormatter

from gpulab.render.plot import SPREAD_LEGEND, is_ceiling, is_model, spread, tick_label

STYLES = ("cyan", "magenta", "green", "yellow", "red", "blue", "white", "bright_cyan")
CEILING_STYLE = "bold red"
COUNTS_SPAN = 64  # an axis of whole numbers this wide or less ticks whole numbers only
MODEL_DOTS = 160  # dots along a model's line, whatever the plot's width


class LogFormatter(AxisFormatter):
    """Ticks at whole decades (plus 2 and 5 when few decades show), labelled in data units."""

    def get_ticks(self, min_: float, max_: float, max_ticks: int = 8) -> list[float]:
        """Ticks at powers of ten (and 2 and 5 between them on a short axis)."""
        lo, hi = math.floor(min_), math.ceil(max_)
        steps = (1, 2, 5) if hi - lo <= 3 else (1,)
        ticks = [
            d + math.log10(s)
            for d in range(lo, hi + 1)
            for s in steps
            if min_ <= d + math.log10(s) <= max_
        ]
        while len(ticks) > max_ticks:
            ticks = ticks[::2]
        return ticks or [min_, max_]

    def get_labels_for_ticks(self, ticks: Sequence[float]) -> list[str]:
        """Labels of log10 ticks as the values they stand for."""
        return [tick_label(10**t) for t in ticks]


class LinearFormatter(NumericAxisFormatter):
    """textual-plot's nice linear ticks, labelled compactly (4K, not 4000.0)."""

    def get_labels_for_ticks(self, ticks: Sequence[float]) -> list[str]:
        """Short labels for the ticks (1k, 2.5M, ...)."""
        return [tick_label(t) for t in ticks]


class CountFormatter(LinearFormatter):
    """Ticks at whole numbers only, for an axis of counts (ranks, steps): no rank 2.2."""

    def get_ticks(self, min_: float, max_: float, max_ticks: int = 8) -> list[float]:
        """Every whole number in range, every other one (and so on) when there are too many."""
        if max_ - min_ > COUNTS_SPAN:
            return super().get_ticks(min_, max_, max_ticks)
        ticks = [float(v) for v in range(math.ceil(min_), math.floor(max_) + 1)]
        step = 1
        while len(ticks[::step]) > max_ticks:
            step += 1
        return ticks[::step] or [min_, max_]


def _counts(series: Sequence[Any]) -> bool:
    """Whether every x of every series is a whole number, over a span short enough to tick."""
    xs = [float(x) for s in series for x in _get(s, "x") if x is not None]
    if not xs or max(xs) - min(xs) > COUNTS_SPAN:
        return False
    return all(x.is_integer() for x in xs)


def _get(series: Any, key: str) -> Any:
    return series[key] if isinstance(series, dict) else getattr(series, key)


def groups(series: Sequence[Any]) -> list[list[Any]]:
    """Series grouped by their (x_label, y_label), in first-seen order."""
    out: dict[tuple[str, str], list[Any]] = {}
    for s in series:
        out.setdefault((_get(s, "x_label") or "x", _get(s, "y_label") or "y"), []).append(s)
    return list(out.values())


def _points(s: Any, log_x: bool, log_y: bool) -> tuple[list[float], list[float]]:
    xs: list[float] = []
    ys: list[float] = []
    for x, y in zip(_get(s, "x"), _get(s, "y"), strict=False):
        if x is None or y is None or not (math.isfinite(x) and math.isfinite(y)):
            continue
        if (log_x and x <= 0) or (log_y and y <= 0):
            continue  # a log axis cannot place it
        xs.append(math.log10(x) if log_x else float(x))
        ys.append(math.log10(y) if log_y else float(y))
    return xs, ys


def _spreads(s: Any, log_x: bool, log_y: bool) -> list[tuple[float, float, float]]:
    """(x, lo, hi) of each point's spread, on the plot's axes."""
    out = []
    for x, (lo, hi) in zip(_get(s, "x"), spread(s), strict=False):
        values = (x, lo, hi)
        if any(v is None or not math.isfinite(v) for v in values):
            continue
        if (log_x and x <= 0) or (log_y and min(lo, hi) <= 0):
            continue
        tx = math.log10(x) if log_x else float(x)
        tlo, thi = (math.log10(v) if log_y else float(v) for v in (lo, hi))
        out.append((tx, tlo, thi))
    return out


def _dotted(xs: list[float], ys: list[float]) -> tuple[list[float], list[float]]:
    """Points along the polyline (xs, ys), evenly spaced in x: a model drawn as dots."""
    pts = sorted(zip(xs, ys, strict=True))
    if len(pts) < 2:
        return xs, ys
    x0, x1 = pts[0][0], pts[-1][0]
    out_x: list[float] = []
    out_y: list[float] = []
    k = 0
    for i in range(MODEL_DOTS + 1):
        x = x0 + (x1 - x0) * i / MODEL_DOTS
        while k < len(pts) - 2 and pts[k + 1][0] < x:
            k += 1
        (xa, ya), (xb, yb) = pts[k], pts[k + 1]
        t = (x - xa) / (xb - xa) if xb > xa else 0.0
        out_x.append(x)
        out_y.append(ya + t * (yb - ya))
    return out_x, out_y


def legend_styles(series: Sequence[Any]) -> list[str]:
    """One colour per series, in order; a calibrated ceiling is always red."""
    out: list[str] = []
    colours = iter(STYLES * 4)
    for s in series:
        out.append(CEILING_STYLE if is_ceiling(s) else next(colours))
    return out


def legend(series: Sequence[Any]) -> Text:
    """The legend line under a plot: a coloured mark and the series' name for each."""
    out = Text()
    for s, style in zip(series, legend_styles(series), strict=True):
        if out:
            out.append("   ")
        mark = "━━ " if is_ceiling(s) else "·· " if is_model(s) else "⣀⠤ "
        out.append(mark, style=style)
        out.append(str(_get(s, "name")))
    if any(spread(s) for s in series):
        out.append(f"   │ {SPREAD_LEGEND}")
    return out


class SeriesPlot(PlotWidget):
    """One plot: every series with the same axes; names starting 'ceiling' draw as a red line."""

    def __init__(self, series: Sequence[Any], **kw: Any) -> None:
        # the wheel scrolls the results, not the plot: no pan and zoom
        super().__init__(allow_pan_and_zoom=False, **kw)
        self.series = list(series)

    def on_mount(self) -> None:
        """Draw the series once PlotWidget has set itself up."""
        # PlotWidget's own on_mount (called after this one) clears the plot: draw after it
        self.call_after_refresh(self._draw)

    def _draw(self) -> None:
        # The draw waits for a refresh; results cleared in between (another experiment chosen:
        # the monkey test found it) leave a widget with no children to draw into.
        if not self.is_mounted or not self.is_attached:
            return
        try:
            self.query_one("#legend")
        except NoMatches:
            return
        # textual-plot's floating legend is placed before its size is known and lands off the
        # plot in a scrolled pane: ResultPlots writes the legend under the plot instead
        self.show_legend(is_visible=False)
        first = self.series[0]
        log_x = any(bool(_get(s, "log_x")) for s in self.series)
        log_y = any(bool(_get(s, "log_y")) for s in self.series)
        linear = CountFormatter() if _counts(self.series) else LinearFormatter()
        self.set_x_formatter(LogFormatter() if log_x else linear)
        self.set_y_formatter(LogFormatter() if log_y else LinearFormatter())
        self.set_xlabel(f"{_get(first, 'x_label') or 'x'}{' (log)' if log_x else ''}")
        self.set_ylabel("")  # textual-plot centres it on the narrow left margin: see caption
        styles = iter(legend_styles(self.series))
        for s in self.series:
            xs, ys = _points(s, log_x, log_y)
            if not xs:
                continue
            name = str(_get(s, "name"))
            style = next(styles)
            if is_ceiling(s):
                self.plot(xs, ys, line_style=style, label=name)
            elif is_model(s):
                dx, dy = _dotted(xs, ys)
                self.scatter(dx, dy, marker="·", marker_style=style, label=name)
            elif len(xs) == 1:
                self.scatter(xs, ys, marker="●", marker_style=style, label=name)
            else:
                self.plot(xs, ys, line_style=style, hires_mode=HiResMode.BRAILLE, label=name)
            for x, lo, hi in _spreads(s, log_x, log_y):
                self.plot([x, x], [lo, hi], line_style=style, hires_mode=HiResMode.BRAILLE)


class ResultPlots(Vertical):
    """All the plots of one result, stacked; empty when the result has no series."""

    def __init__(self, **kw: Any) -> None:
        super().__init__(**kw)
        self._shown: list[Any] = []

    def compose(self) -> ComposeResult:
        """Nothing until a run has series."""
        yield from ()

    def show(self, series: Sequence[Any]) -> None:
        """A plot per series (rebuilt only when the series change)."""
        if list(series) == self._shown:
            return  # a flush with nothing new must not rebuild (and flicker) the plots
        self._shown = list(series)
        self.remove_children()
        widgets: list[Static | SeriesPlot] = []
        for g in groups(series):
            log_y = any(bool(_get(s, "log_y")) for s in g)
            y = f"{_get(g[0], 'y_label') or 'y'}{' (log scale)' if log_y else ''}"
            widgets.append(Static(f"↑ {y}", classes="plot-caption", markup=False))
            widgets.append(SeriesPlot(g))
            widgets.append(Static(legend(g), classes="plot-legend"))
        self.display = bool(widgets)
        if widgets:
            self.mount(*widgets)
