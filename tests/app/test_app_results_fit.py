"""Results that fit: plots with axes in data units, images with a 1:1 crop, the
race's labels and counts, the GPU at a glance, and the keys (maximize, quit during a run)."""

from __future__ import annotations

import time
from collections import deque

import numpy as np
import pytest
from PIL import Image
from rich.console import Console

from gpulab.app.app import GpuLabApp
from gpulab.app.panes.gpu_glance import History, glance, processes, sparkline
from gpulab.app.runs import RunState
from gpulab.app.widgets.images import ImageView
from gpulab.app.widgets.plots import LogFormatter, groups
from gpulab.app.widgets.race import RaceView, abbreviate
from gpulab.render.plot import tick_label
from gpulab.telemetry.snapshot import GpuSnapshot, ProcessInfo
from gpulab.telemetry.values import NA
from gpulab.testing.fake_runner import FakeRunner


def text_of(renderable, width: int = 100) -> str:
    console = Console(width=width, record=True, file=open("/dev/null", "w"))  # noqa: SIM115
    console.print(renderable)
    return console.export_text()


# ---- axes in the data's units --------------------------------------------------------------
@pytest.mark.parametrize(
    ("value", "label"),
    [(256, "256"), (4096, "4096"), (1e6, "1M"), (2.5e9, "2.5G"), (0.5, "0.5"), (1e-3, "0.001")],
)
def test_tick_labels_read_in_the_data_units(value, label):
    assert tick_label(value) == label


def test_log_ticks_fall_on_decades_and_read_as_values():
    f = LogFormatter()
    ticks = f.get_ticks(2.0, 7.0)  # 100 .. 10M
    assert ticks == [2.0, 3.0, 4.0, 5.0, 6.0, 7.0]
    assert f.get_labels_for_ticks(ticks) == ["100", "1000", "10k", "100k", "1M", "10M"]
    few = f.get_ticks(0.0, 1.0)  # one decade: 2 and 5 fill in
    assert f.get_labels_for_ticks(few) == ["1", "2", "5", "10"]


def test_series_with_other_axes_get_their_own_plot():
    s = [
        {"name": "a", "x_label": "n", "y_label": "speedup"},
        {"name": "b", "x_label": "n", "y_label": "TFLOP/s"},
        {"name": "c", "x_label": "n", "y_label": "speedup"},
    ]
    assert [[x["name"] for x in g] for g in groups(s)] == [["a", "c"], ["b"]]


# ---- images -------------------------------------------------------------------------------
def test_a_large_image_scaled_down_also_shows_a_one_to_one_crop(tmp_path):
    rng = np.random.default_rng(0)
    paths = []
    for name in ("before", "after"):
        p = tmp_path / f"{name}.png"
        Image.fromarray(rng.integers(0, 255, (400, 600, 3), dtype=np.uint8)).save(p)
        paths.append({"kind": "image", "name": name, "path": str(p)})
    view = ImageView()
    view.show(paths)
    wide = text_of(view.build(60), 60)
    assert "before | after" in wide and "Centre at 1:1" in wide
    small = tmp_path / "small.png"
    Image.fromarray(rng.integers(0, 255, (20, 30, 3), dtype=np.uint8)).save(small)
    view.show([{"kind": "image", "name": "tiny", "path": str(small)}])
    assert "Centre at 1:1" not in text_of(view.build(60), 60)  # shown at 1:1 already


# ---- the race -----------------------------------------------------------------------------
def test_labels_are_whole_when_they_fit_and_cut_at_a_word_when_not():
    label = "PyTorch GPU (two torch.rand arrays)"
    assert abbreviate(label, 40) == label
    short = abbreviate(label, 20)
    assert len(short) <= 20 and short.endswith("…") and "torch.r…" not in short


def test_race_explains_its_counts_and_marks_extrapolated_rows():
    race = RaceView()
    race.contenders = [("python", "pure Python (lists)", ""), ("numpy", "NumPy", "")]
    state = RunState(1, "matmul", {"sizes": [64, 512], "dtypes": ["fp32"]}, started=time.time())
    state.rows = {
        "1": {"contender": "python", "size": "64", "time_median_s": 0.1},
        "2": {"contender": "python", "size": "512", "time_median_s": 60.0, "extrapolated": True},
        "3": {"contender": "numpy", "size": "64", "time_median_s": 0.001},
    }
    race.state = state
    text = race.render_race(100).plain
    assert "pure Python (lists)" in text
    python_row = text.splitlines()[0]
    assert "2/2 (1 extrapolated)" in python_row and "  ~" in python_row  # its latest: a guess
    assert "~" not in text.splitlines()[1]
    assert "rows done of the 2 asked" in text and "extrapolated from smaller sizes" in text
    assert "not run" not in text  # still running: the rest may yet come
    state.status = "result"
    # Finished: speed against the fastest where most contenders ran (n=64), on a log scale
    python_row, numpy_row, key = race.render_race(100).plain.splitlines()
    assert python_row.rstrip().endswith("100 ms  100x slower")
    assert numpy_row.rstrip().endswith("1 ms  fastest")
    assert python_row.count("█") < numpy_row.count("█") == 40
    assert key == "bars: speed against the fastest at n=64 (log scale: a 100x spread)"


def test_a_finished_race_draws_speed_against_the_fastest():
    race = RaceView()
    race.contenders = [("a", "NumPy", ""), ("b", "torch", ""), ("c", "CuPy", "no CuPy")]
    state = RunState(1, "blur", {}, started=time.time())
    state.rows = {
        "1": {"contender": "a", "size": "4096", "dtype": "fp32", "time_median_s": 0.004},
        "2": {"contender": "b", "size": "4096", "dtype": "fp32", "time_median_s": 0.002},
    }
    state.status = "result"
    race.state = state
    a_row, b_row, c_row, key = race.render_race(100).plain.splitlines()
    assert a_row.count("█") == 20 and b_row.count("█") == 40  # linear: half as fast, half a bar
    assert "2x slower" in a_row and "fastest" in b_row and "unavailable: no CuPy" in c_row
    assert key == "bars: speed against the fastest at n=4096 fp32 (linear scale)"
    state.status = "running"  # while it runs, the bars are its progress again
    assert "1/1" in race.render_race(100).plain


# ---- the GPU at a glance ------------------------------------------------------------------
def snap(**kw) -> GpuSnapshot:
    base = dict(
        t=time.time(),
        memory_total=80 * 2**30,
        memory_used=20 * 2**30,
        memory_free=60 * 2**30,
        gpu_util=97,
        mem_util=40,
        temperature_c=61,
        power_w=512.0,
        sm_clock_mhz=1980,
        pcie_gen=5,
        pcie_width=16,
        pcie_tx=2.0e9,
        pcie_rx=3.0e9,
        processes=[
            ProcessInfo(4242, "compute", 18 * 2**30, "python3"),
            ProcessInfo(777, "compute", 2 * 2**30, "other-job"),
        ],
    )
    base.update(kw)
    return GpuSnapshot(0, **base)


def test_glance_has_every_live_figure_in_a_compact_pane():
    out = text_of(glance(snap(), 700.0, None, 38, tall=False), 38)
    for want in ("97%", "20.0/80.0 GiB", "512/700 W", "SM 1980 MHz", "61 °C", "2000 MB/s"):
        assert want in out, (want, out)
    assert len(out.splitlines()) <= 5  # fits a short screen


def test_glance_draws_sparklines_when_tall():
    history = History()
    for i in range(10):
        history.add(snap(gpu_util=i * 10, t=float(i)), 700.0)
    out = text_of(glance(snap(), 700.0, history, 80, tall=True), 80)
    assert "▁" in out and "█" in out
    assert sparkline(deque([None, 0.0, 1.0]), 3).plain == " ▁█"
    assert "▁" not in text_of(glance(snap(), 700.0, history, 80, tall=False), 80)


def test_processes_mark_the_labs_worker_and_say_when_unreadable():
    out = text_of(processes(snap(), 4242, 60), 60)
    assert "gpulab worker" in out.splitlines()[1]  # the largest first: the worker's 18 GiB
    assert "other-job" in out and "gpulab worker" not in out.splitlines()[2]
    assert "N/A (no permission)" in text_of(processes(snap(processes=NA("no permission")), 1, 60))


# ---- keys ---------------------------------------------------------------------------------
async def _ready(pilot) -> None:
    deadline = time.monotonic() + 30
    while not (pilot.app.handshake is not None and pilot.app.focused is not None):
        assert time.monotonic() < deadline
        await pilot.pause(0.05)


async def test_quitting_during_a_run_asks_first_and_m_maximizes_the_results():
    app = GpuLabApp(runner_factory=lambda **kw: FakeRunner(hold=True, **kw))
    async with app.run_test(size=(80, 24)) as pilot:
        await _ready(pilot)
        await pilot.press("r")
        while not app.panel.running:
            await pilot.pause(0.05)
        app.set_focus(None)
        await pilot.press("q")
        await pilot.pause()
        assert app.is_running and app.panel.running  # asked, not quit
        assert any("would be lost" in n.message for n in app._notifications)
        await pilot.press("m")
        await pilot.pause()
        assert app.screen.maximized is app.query_one("#exp-tabs")
        await pilot.press("m")
        await pilot.pause()
        assert app.screen.maximized is None
        await pilot.press("m")
        await pilot.pause()
        await pilot.press("escape")  # restores the layout
        await pilot.pause()
        assert app.screen.maximized is None
        await pilot.press("q")  # the second q quits
        await pilot.pause(0.5)
    assert not app.is_running


def test_matmul_roofline_series_carry_the_calibrated_ceiling():
    from gpulab.core.results import Measurement, Result, RunRecord
    from gpulab.experiments.roofline import throughput_series
    from gpulab.render.plot import plot_groups

    r = Result(RunRecord("matmul", {}))
    for size, tflops, pct in ((256, 10.0, 20.0), (1024, 40.0, 80.0)):
        m = Measurement("torch", str(size), 1e-3, 1e-3, 1e-3, 3, dtype="fp16")
        m.throughput, m.unit, m.percent_of_peak = tflops, "TFLOP/s", pct
        r.measurements.append(m)
    guess = Measurement("python", "1024", 9.0, 9.0, 9.0, 0, dtype="fp64", extrapolated=True)
    guess.throughput = 1e-6
    r.measurements.append(guess)
    throughput_series(r, "n")
    by_name = {s.name: s for s in r.series}
    assert set(by_name) == {"torch fp16", "ceiling fp16 (calibrated)"}  # no guessed line
    assert by_name["ceiling fp16 (calibrated)"].y == [50.0, 50.0]
    assert by_name["ceiling fp16 (calibrated)"].x == [256.0, 1024.0]
    text = plot_groups(r.series)
    assert "y: TFLOP/s (log)" in text and "256" in text and "1024" in text


async def test_switching_experiments_clears_every_tab_and_history_keeps_the_run():
    app = GpuLabApp(runner_factory=lambda **kw: FakeRunner(**kw))
    async with app.run_test(size=(120, 40)) as pilot:
        await _ready(pilot)
        await pilot.press("r")
        while not (app.panel.live is not None and app.panel.live.finished):
            await pilot.pause(0.05)
        await pilot.pause()
        assert app.query_one("#results").row_count > 0
        assert app.query_one("#plot").query("SeriesPlot")
        assert app.focused is not None and type(app.focused).__name__ == "ContentTabs"
        app.panel.load("blur")
        await pilot.pause()
        assert app.query_one("#results").row_count == 0
        assert not app.query_one("#plot").query("SeriesPlot")
        assert not app.query_one("#headline").display
        assert "montecarlo" in str(app.query_one("#history").get_option_at_index(0).prompt)


def test_cli_prints_the_plots_before_the_answer_only_when_asked():
    from gpulab.render.results import render_result

    result = {
        "record": {"experiment": "montecarlo", "device": "cpu"},
        "series": [
            {
                "name": "standard error",
                "x": [1e3, 1e6],
                "y": [0.05, 0.0016],
                "x_label": "samples",
                "y_label": "|estimate - pi|",
                "log_x": True,
                "log_y": True,
            }
        ],
        "headline": "pi ≈ 3.1416",
    }
    plain = render_result(result)
    assert "samples (log)" not in plain
    plotted = render_result(result, plots=True)
    assert plotted.index("x: samples (log)") < plotted.index("Answer: pi")
    assert "1000" in plotted and "1M" in plotted  # axes in the data's units
