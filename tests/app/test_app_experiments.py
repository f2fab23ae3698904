"""Blur and the matmul race run from the experiment panel of the real app (Pilot, real runner),
their rows read back from the results table (montecarlo's is in test_app.py).

Small sizes keep each run to seconds; the CPU calibration is pre-seeded so the worker does not
spend its seconds measuring one (its figures sit far above this CPU, so no row re-measures it).
"""

from __future__ import annotations

import time
from typing import Any

from test_app import ready, wait_for
from textual.widgets import DataTable, Static

from gpulab.app.app import GpuLabApp
from gpulab.core import events as ev
from gpulab.core import peaks as pk
from gpulab.core.devices import detect

HEADERS = ["contender", "size", "dtype", "time", "throughput", "% peak", "verdict"]


def table_rows(app: GpuLabApp) -> list[dict[str, str]]:
    table = app.query_one("#results", DataTable)
    return [dict(zip(HEADERS, (str(c) for c in table.get_row(k)), strict=True)) for k in table.rows]


def seed_cpu_calibration() -> None:
    """A full (not quick) CPU calibration in the test's data dir, as `gpulab bench` leaves one."""
    key = pk.device_key(detect(), 0, cpu=True)
    peaks = pk.Peaks(key=key, device="CPU (seeded for the test)", cpu=True, copy_gbs=10_000.0)
    peaks.matmul_tflops = {"fp32": 100.0, "fp64": 50.0}
    peaks.measured_at = time.time()
    pk._write(peaks)


async def run_from_panel(pilot, experiment: str, params: dict[str, str]) -> Any:
    app = pilot.app
    app.open_experiment(experiment, params)
    await pilot.pause()
    assert app.panel.experiment_id == experiment
    await pilot.press("r")
    await wait_for(pilot, lambda: app.panel.live and app.panel.live.finished, 120, experiment)
    state = app.panel.live
    assert state.experiment == experiment
    assert state.status == ev.RESULT, state.final
    return state


async def test_blur_runs_from_the_panel():
    seed_cpu_calibration()
    app = GpuLabApp()
    async with app.run_test(size=(160, 48)) as pilot:
        await ready(pilot)
        params = {"image": "synthetic", "width": "96", "height": "64", "kernel": "box"}
        state = await run_from_panel(pilot, "blur", {**params, "radius": "2"})
        rows = {r["contender"]: r for r in table_rows(app)}
        scipy = rows["scipy"]
        assert scipy["size"] == "96x64" and scipy["dtype"] == "fp32"
        assert scipy["throughput"].endswith("GB/s")
        assert scipy["% peak"].endswith("%")  # against the (seeded) CPU copy ceiling
        assert scipy["verdict"] == "pass"
        for row in rows.values():  # GPU contenders too, where there is a GPU
            assert row["verdict"] == "pass", row
        result = state.result
        assert [a["kind"] for a in result["artifacts"]] == ["image", "image"]
        assert result["summary"]["size"] == "96x64"
        explanation = str(app.query_one("#explanation", Static).render())
        assert "lesson: parallel-patterns" in explanation
        assert "done in" in str(app.query_one("#step", Static).render())


async def test_matmul_race_runs_from_the_panel():
    seed_cpu_calibration()
    app = GpuLabApp()
    async with app.run_test(size=(160, 48)) as pilot:
        await ready(pilot)
        params = {"sizes": "64, 128", "dtypes": "fp32", "contenders": "python, numpy"}
        state = await run_from_panel(pilot, "matmul", params)
        rows = {(r["contender"], r["size"], r["dtype"]): r for r in table_rows(app)}
        assert set(rows) == {
            ("python", "64", "fp64"),
            ("python", "128", "fp64"),
            ("numpy", "64", "fp32"),
            ("numpy", "128", "fp32"),
        }
        for (who, _, _), r in rows.items():
            assert r["verdict"] == "pass", r
            assert r["throughput"].endswith("TFLOP/s")
            # NumPy rows against the calibrated NumPy matmul; Python has no ceiling.
            assert r["% peak"].endswith("%") if who == "numpy" else r["% peak"] == "-"
        race = str(app.query_one("#race").render())
        assert "2/2" in race
        assert state.result["summary"]["seed"]  # fresh inputs, the seed recorded
        explanation = str(app.query_one("#explanation", Static).render())
        assert "lesson: dtypes-and-tensor-cores" in explanation
        # What a cell cannot say is under the explanation: here, Python's rows are fp64 floats.
        assert "Notes on rows:" in explanation and "python 64 fp64: Python floats" in explanation
