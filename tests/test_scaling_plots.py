"""Scaling you can see: the ring's alpha-beta model fitted to a run's own points, and plots whose
points carry their spread beside a model's dotted line, in the CLI's text plot and the TUI."""

from __future__ import annotations

import pytest

from gpulab.core.results import Series
from gpulab.experiments import ring_model
from gpulab.render.plot import MODEL_MARK, SPREAD_LEGEND, SPREAD_MARK, plot, spread

ALPHA, B = 5e-6, 300e9  # a made-up card: 5 us a ring step, 300 GB/s a link


def _times(n: int, sizes: list[int]) -> list[tuple[int, float]]:
    return [(s, 2 * (n - 1) * ALPHA + 2 * (n - 1) / n * s / B) for s in sizes]


def test_the_fit_recovers_alpha_and_b_from_the_smallest_and_largest_points():
    points = _times(4, [16, 2**20, 2**30])
    model = ring_model.fit(points, 4)
    assert model.alpha_s == pytest.approx(ALPHA, rel=1e-6)
    assert model.bandwidth_bps == pytest.approx(B, rel=1e-6)
    assert "16 B" in model.fitted_from and "1 GiB one" in model.fitted_from
    assert "6 ring steps on 4 ranks" in model.fitted_from
    # busbw tends to B for a large message, and is all latency for a small one
    assert model.busbw_gbs(2**34, 4) == pytest.approx(B / 1e9, rel=0.01)
    assert model.busbw_gbs(16, 4) < 0.01
    # on 2 ranks the same constants predict the time of 2 steps, not 6
    assert model.time_s(16, 2) == pytest.approx(2 * ALPHA + 16 / B)


def test_the_fit_refuses_what_cannot_fix_it():
    assert ring_model.fit(_times(4, [4096]), 4) is None  # one size
    assert ring_model.fit([(16, 2e-5), (2**20, 1e-5)], 4) is None  # larger is faster: no B
    assert ring_model.fit(_times(2, [16, 2**20]), 1) is None  # one rank: no ring


def test_describe_names_what_each_constant_came_from_and_the_peer_copy():
    model = ring_model.fit(_times(2, [16, 2**30]), 2)
    text = ring_model.describe(model, 400.0)
    assert text.startswith("alpha = 5 us a step, B = 300 GB/s (0.75 of this run's 400 GB/s")
    assert "alpha from the 16 B all-reduce's median" in text and "B from the 1 GiB" in text


def _measured() -> Series:
    return Series(
        "all-reduce busbw",
        [16.0, 4096.0, 2.0**20],
        [0.001, 0.2, 40.0],
        "message size (bytes)",
        "busbw (GB/s)",
        log_x=True,
        log_y=True,
        lo=[0.0008, 0.1, 30.0],
        hi=[0.0012, 0.3, 45.0],
    )


def test_the_text_plot_draws_each_spread_as_a_bar_and_the_model_as_dots():
    model = ring_model.size_series(ring_model.fit(_times(2, [16, 2**20]), 2), [16, 4096, 2**20], 2)
    text = plot([_measured(), model], width=60, height=12)
    grid = [line.split("│", 1)[1] for line in text.splitlines()[:12]]
    assert any(SPREAD_MARK in row for row in grid)  # the bars
    assert sum(row.count(MODEL_MARK) for row in grid) >= 10  # a dotted line across
    legend = text.splitlines()[-1]
    assert f"{MODEL_MARK} all-reduce, ring model (alpha-beta)" in legend
    assert f"{SPREAD_MARK} {SPREAD_LEGEND}" in legend
    # the axis reaches the spread's top, not only the point's
    assert plot([_measured()]).splitlines()[0].lstrip().startswith("45")


def test_a_series_without_spread_or_from_an_old_result_draws_as_before():
    old = Series("a", [1.0, 2.0], [1.0, 2.0]).to_dict()
    del old["lo"], old["hi"], old["model"]  # a result saved before spreads and models
    assert spread(old) == [] and SPREAD_LEGEND not in plot([old])
    mismatched = Series("b", [1.0, 2.0], [1.0, 2.0], lo=[0.5])
    assert spread(mismatched) == []


async def test_the_tui_plot_draws_spreads_and_the_model_with_its_legend():
    from textual.app import App
    from textual_plot.plot_widget import ErrorBarPlot, LinePlot, ScatterPlot

    from gpulab.app.widgets.plots import SeriesPlot, legend

    model = ring_model.size_series(ring_model.fit(_times(2, [16, 2**20]), 2), [16, 4096, 2**20], 2)
    series = [_measured().to_dict(), model.to_dict()]

    class One(App):
        def compose(self):
            yield SeriesPlot(series)

    app = One()
    async with app.run_test(size=(100, 30)) as pilot:
        widget = app.query_one(SeriesPlot)
        while not widget._datasets:
            await pilot.pause(0.05)
        kinds = [type(d) for d in widget._datasets]
    assert kinds.count(LinePlot) == 1 + 3  # the measured line, then a bar per point
    assert kinds.count(ScatterPlot) == 1  # the model, as dots
    assert ErrorBarPlot not in kinds
    text = legend(series).plain
    assert "·· all-reduce, ring model (alpha-beta)" in text and SPREAD_LEGEND in text


def test_an_axis_of_rank_counts_ticks_whole_numbers_only():
    from gpulab.app.widgets.plots import CountFormatter, _counts

    ranks = Series("busbw", [2.0, 3.0, 4.0], [300.0, 330.0, 355.0], "ranks", "busbw (GB/s)")
    assert _counts([ranks]) and not _counts([_measured()])  # sizes: whole, but far too wide
    assert CountFormatter().get_ticks(1.9, 4.1) == [2.0, 3.0, 4.0]
    many = CountFormatter().get_ticks(1, 64, max_ticks=8)
    assert len(many) <= 8 and all(t.is_integer() for t in many) and many[0] == 1.0
    assert len(CountFormatter().get_ticks(0, 1e9)) <= 8  # too wide: the plain nice ticks
