"""Bandwidth vs transfer size: this GPU's calibrated host<->device ceilings drawn as lines (issue
15), in the TUI's plot and legend and in the CLI's text plot; none without a GPU calibration."""

from __future__ import annotations

import time
from typing import Any

from test_app_experiments import seed_cpu_calibration

from gpulab.core.peaks import Peaks
from gpulab.experiments import ceilings
from gpulab.experiments.bandwidth_report import curve_series, summary
from gpulab.render.plot import CEILING_MARK, plot_groups

H2D, D2H = 55.2, 52.8
H2D_NAME = "ceiling h2d (calibrated pinned copy) 55.2 GB/s"
D2H_NAME = "ceiling d2h (calibrated pinned copy) 52.8 GB/s"
SIZES = [65536.0, 262144.0, 1048576.0, 4194304.0]
CURVES = {
    "h2d-pageable": [(x, y) for x, y in zip(SIZES, (2.1, 4.0, 6.5, 8.3), strict=True)],
    "h2d-pinned": [(x, y) for x, y in zip(SIZES, (9.0, 25.0, 44.0, 53.9), strict=True)],
    "d2h-pinned": [(x, y) for x, y in zip(SIZES, (8.0, 22.0, 40.0, 51.5), strict=True)],
    "host-memcpy": [(x, y) for x, y in zip(SIZES, (30.0, 28.0, 12.0, 11.0), strict=True)],
}


def _gpu_peaks(**kw: Any) -> ceilings.Ceilings:
    """A fake GPU calibration (the figures the plot must show), no device needed."""
    gpu = Peaks(key="fake-gpu", device="H100 (fake)", cpu=False, copy_gbs=2900.0)
    gpu.h2d_pinned_gbs, gpu.d2h_pinned_gbs = kw.get("h2d", H2D), kw.get("d2h", D2H)
    return ceilings.Ceilings(gpu)


def _series(ceilings: Any, curves: dict | None = None) -> list[Any]:
    curves = CURVES if curves is None else curves
    return curve_series(curves, summary(curves, {}, None, ceilings))


def test_the_calibrated_h2d_and_d2h_ceilings_are_lines_at_their_figures():
    by_name = {s.name: s for s in _series(_gpu_peaks())}
    assert set(CURVES) | {H2D_NAME, D2H_NAME} == set(by_name)
    for name, peak in ((H2D_NAME, H2D), (D2H_NAME, D2H)):
        line = by_name[name]
        assert line.y == [peak, peak]  # flat, at the calibration's own figure
        assert line.x == [SIZES[0], SIZES[-1]]  # across the sizes the rows span
        assert (line.x_label, line.y_label, line.log_x, line.log_y) == (
            "bytes per copy",
            "GB/s",
            True,
            True,
        )
    # The measured curves are unchanged by the ceilings beside them.
    assert by_name["h2d-pinned"].y == [9.0, 25.0, 44.0, 53.9]


def test_no_ceiling_line_without_a_gpu_calibration_or_without_its_rows():
    cpu = Peaks(key="cpu", device="CPU", cpu=True, copy_gbs=20.0)
    for here in (None, ceilings.Ceilings(cpu)):
        names = [s.name for s in _series(here)]
        assert names == list(CURVES), names  # no line, and no name that claims one
        assert not any("ceiling" in n for n in names)
    # A calibration without the d2h figure draws the h2d line only.
    names = [s.name for s in _series(_gpu_peaks(d2h=None))]
    assert H2D_NAME in names and not any(n.startswith("ceiling d2h") for n in names)
    # A GPU calibration but only the host row ran (no host<->device rows to judge): no line.
    host_only = {"host-memcpy": CURVES["host-memcpy"]}
    assert [s.name for s in _series(_gpu_peaks(), host_only)] == ["host-memcpy"]


def test_the_text_plot_draws_the_ceiling_as_a_line_and_names_it():
    text = plot_groups(_series(_gpu_peaks()))
    assert f"{CEILING_MARK} {H2D_NAME}" in text and f"{CEILING_MARK} {D2H_NAME}" in text
    grid = [line.split("│", 1)[1] for line in text.splitlines() if "│" in line]
    # The highest curve point is 53.9 GB/s, so the top row is the 55.2 ceiling: a line across.
    assert grid[0].count(CEILING_MARK) >= 0.9 * len(grid[0].rstrip())
    assert text.splitlines()[0].lstrip().startswith("55.2")
    # Without the calibration, no line is drawn and none named.
    bare = plot_groups(_series(None))
    assert CEILING_MARK not in bare and "ceiling" not in bare


def test_the_tui_legend_shows_the_ceiling_in_red():
    from gpulab.app.widgets.plots import CEILING_STYLE, legend, legend_styles

    series = _series(_gpu_peaks())
    styles = dict(zip((s.name for s in series), legend_styles(series), strict=True))
    assert styles[H2D_NAME] == styles[D2H_NAME] == CEILING_STYLE
    assert styles["h2d-pinned"] != CEILING_STYLE
    assert f"━━ {H2D_NAME}" in legend(series).plain


async def test_the_panel_plots_the_ceiling_from_a_bandwidth_result():
    from textual.widgets import Static

    from gpulab.app.app import GpuLabApp
    from gpulab.app.widgets.plots import SeriesPlot
    from gpulab.core import events as ev
    from gpulab.testing.fake_runner import FakeRunner, frozen

    series = [s.to_dict() for s in _series(_gpu_peaks())]

    async def bandwidth(job: Any, emit: Any) -> None:
        emit(frozen(ev.ACCEPTED, job.id, experiment=job.experiment, params=job.params))
        record = {"experiment": "bandwidth", "params": job.params, "device": "fake"}
        result = {"record": record, "measurements": [], "series": series, "summary": {}}
        emit(frozen(ev.RESULT, job.id, result=result))

    app = GpuLabApp(runner_factory=lambda **kw: FakeRunner(script=bandwidth, **kw))
    async with app.run_test(size=(120, 40)) as pilot:
        deadline = time.monotonic() + 30
        while not (app.handshake is not None and app.focused is not None):
            assert time.monotonic() < deadline, "the app never became ready"
            await pilot.pause(0.05)
        app.open_experiment("bandwidth")
        await pilot.pause()
        await pilot.press("r")
        while not (app.panel.live is not None and app.panel.live.finished):
            assert time.monotonic() < deadline + 30, "the run never finished"
            await pilot.pause(0.05)
        await pilot.pause()
        plots = app.query_one("#plot")
        assert plots.query(SeriesPlot)
        legends = [str(w.render()) for w in plots.query(Static) if w.has_class("plot-legend")]
        assert any(H2D_NAME in t and D2H_NAME in t for t in legends), legends


def test_a_cpu_run_with_a_calibration_claims_no_ceiling(cpu_inventory):
    from gpulab.experiments.bandwidth import EXPERIMENT
    from gpulab.experiments.base import Context

    seed_cpu_calibration()  # a CPU calibration exists: it has no host<->device figure
    params = EXPERIMENT.params.validate({"min_size": "64Ki", "max_size": "256Ki"})
    res = EXPERIMENT.run(Context(inventory=cpu_inventory, quick=True), params)
    assert [s.name for s in res.series] == ["host-memcpy"]
    assert "h2d_pinned_peak_gbs" not in res.summary
    assert "ceiling" not in plot_groups(res.series)
