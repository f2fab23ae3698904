"""One figure for one fact, wherever it is shown: the card's memory, and "% peak" with no peak.

The card is an H100 80GB as NVML reports it (81559 MiB, 79.6 GiB) with the driver's 536 MiB
reserve, which CUDA (torch's total_memory) does not count: CUDA sees 79.1 GiB. Before, the
GPU list rounded to "80 GiB", the panes said 79.6 and the lessons and `gpulab info` said
CUDA's figure.
"""

from __future__ import annotations

from typing import Any

from test_panes_telemetry import SIZE, PanesApp, _details, _plain, _sample

from gpulab.app.panes.experiments import ExperimentPanel
from gpulab.app.panes.memory_gauge import MemoryGauge
from gpulab.app.runs import RunState
from gpulab.benchmark.markdown import markdown
from gpulab.lessons.measured import Measured
from gpulab.render.results import HEADERS, measurement_rows
from gpulab.telemetry.cli import info_lines
from gpulab.telemetry.sampler import TelemetryReader
from gpulab.testing.fake_nvml import MiB, worker_inventory

CARD, CUDA = "79.6 GiB", "79.1 GiB"
RESERVE_NOTE = f"(CUDA gets {CUDA}: 536 MiB is the driver's reserve)"


def _h100(fake: Any) -> None:
    fake.gpus[0].total = 81559 * MiB
    fake.gpus[0].reserved = 536 * MiB


def _assert_one_figure(text: str, where: str) -> None:
    assert CARD in text, f"{where} does not show the card's {CARD}: {text!r}"
    assert "80 GiB" not in text and "80.0 GiB" not in text, where
    if CUDA in text:  # CUDA's figure only ever beside what the difference is
        assert RESERVE_NOTE in text, f"{where} shows CUDA's figure unexplained: {text!r}"


async def test_the_card_memory_is_one_figure_in_every_pane_the_cli_and_the_lessons():
    app = PanesApp("full")
    _h100(app.fake)
    async with app.run_test(size=SIZE) as pilot:
        await _sample(app, pilot)
        gpu_list = str(app.query_one("#gpu-list").get_option_at_index(0).prompt)
        _assert_one_figure(gpu_list, "the GPU list")
        details = " ".join(_details(app).split())
        _assert_one_figure(details, "the GPU details")
        assert RESERVE_NOTE in details  # where it matters: what the card has vs what CUDA gets
        _assert_one_figure(_plain(app.query_one(MemoryGauge)), "the memory gauge")

    reader = TelemetryReader(app.fake, procs=app.fake.procs)
    frame = reader.read()
    worker = worker_inventory(app.fake)
    nvml = frame.inventory.with_worker(worker)
    info = "\n".join(info_lines(nvml, frame.snapshots))
    _assert_one_figure(info, "gpulab info")
    assert RESERVE_NOTE in info
    # The lessons: the worker's inventory alone would say CUDA's figure; the card's wins.
    lesson = Measured.collect(worker, telemetry=nvml)("memory_total_gib")
    assert lesson == CARD
    assert Measured.collect(worker)("memory_total_gib") == CUDA  # no NVML: all there is


ROWS = [
    # a row whose work has no calibrated ceiling, one against a ceiling, one with no figure
    {
        "contender": "numpy",
        "percent_of_peak": None,
        "peak_name": "no calibrated ceiling for this work (random numbers + a compare)",
    },
    {"contender": "torch", "percent_of_peak": 41.6, "peak_name": "HBM copy"},
    {"contender": "python", "percent_of_peak": None, "peak_name": ""},
]


def _full(row: dict[str, Any]) -> dict[str, Any]:
    base = {"size": "1", "dtype": "", "time_median_s": 1e-3, "time_min_s": 1e-3}
    base |= {"time_max_s": 1e-3, "throughput": 1.0, "unit": "GB/s", "cold_s": None}
    return base | row


def test_percent_of_peak_is_spelled_the_same_in_the_tui_the_cli_and_the_bench():
    rows = [_full(r) for r in ROWS]
    result = {"measurements": rows, "verdicts": []}
    cli = [r[HEADERS.index("% peak")] for r in measurement_rows(result)]
    state = RunState(1, "montecarlo", {})
    tui = [str(ExperimentPanel._cells(state, r)[5]) for r in rows]
    report = {
        "suite": "core",
        "device": "test",
        "versions": {},
        "gpulab_version": "0",
        "started_at": 0.0,
        "comparisons": [],
        "runs": [{"experiment": "x", "params": {}, "status": "result", "result": result}],
    }
    bench = [
        line.split("|")[6].strip()
        for line in markdown(report).splitlines()
        if line.startswith(("| numpy", "| torch", "| python"))
    ]
    assert cli == ["n/a", "42%", "-"]
    assert tui == cli
    assert bench == cli
