"""Runs from `gpulab run` (a real worker, in a subprocess) and from the TUI (Pilot, the fake runner)
are both kept: `gpulab history` in a new process lists them, and a restarted TUI lists, compares
and reopens them. The panel shows each run's headline above the tabs.
"""

from __future__ import annotations

import json
import threading

from test_app import fake_app, ready, table_rows, wait_for
from test_cli import gpulab
from textual.widgets import OptionList, Static

from gpulab.app.widgets.history import RunHistory
from gpulab.core import events as ev


def _headline(app) -> str:
    line = app.query_one("#headline", Static)
    return str(line.render()) if line.display else ""


async def _run_in_tui(pilot) -> None:
    app = pilot.app
    await pilot.press("r")
    await wait_for(pilot, lambda: app.panel.live and app.panel.live.finished, 10, "the run")
    assert app.panel.live.status == ev.RESULT


async def test_cli_and_tui_runs_are_kept_across_a_restart():
    out = gpulab("run", "montecarlo", "--set", "samples=20000")
    assert out.returncode == 0, out.stderr
    assert out.stdout.rstrip().splitlines()[-1].startswith("Answer: pi ≈ ")  # printed last
    assert "kept as run 1 " in out.stderr

    app = fake_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await ready(pilot)
        await wait_for(pilot, lambda: app.query_one(RunHistory).loaded, 10, "the kept runs")
        history = app.query_one("#history", OptionList)
        assert history.option_count == 1  # the CLI's run, kept by another process
        await _run_in_tui(pilot)
        assert _headline(app).startswith("➜ pi ≈ 3.141600 (error 7.3e-06")
        assert app.panel.live.kept_id == 2
        await pilot.press("q")

    listed = gpulab("history", "--json")  # a new process: what a restart reads
    assert listed.returncode == 0, listed.stderr
    runs = json.loads(listed.stdout)["runs"]
    assert [(r["id"], r["source"], r["experiment"]) for r in runs] == [
        (1, "cli", "montecarlo"),
        (2, "tui", "montecarlo"),
    ]
    assert all(r["headline"].startswith("pi ≈ ") and r["status"] == "result" for r in runs)
    assert runs[1]["params"] == {"samples": 10_000_000, "seed": 0}
    table = gpulab("history")
    assert table.returncode == 0 and "cli" in table.stdout and "tui" in table.stdout

    again = fake_app()  # the TUI restarted: both kept runs, compared and reopened
    async with again.run_test(size=(120, 40)) as pilot:
        await ready(pilot)
        await wait_for(pilot, lambda: again.query_one(RunHistory).loaded, 10, "the kept runs")
        again.query_one("#exp-tabs").active = "tab-history"
        history = again.query_one("#history", OptionList)
        await pilot.pause()
        assert history.option_count == 2
        assert [history.get_option_at_index(i).id for i in (0, 1)] == ["kept-1", "kept-2"]
        history.focus()
        for i in (0, 1):
            history.highlighted = i
            await pilot.press("space")
        assert again.query_one(RunHistory).marked == ["kept-1", "kept-2"]
        detail = str(again.query_one("#history-detail", Static).render())
        assert "A/B time" in detail and "numpy" in detail and "params differ" in detail
        history.highlighted = 0
        await pilot.press("enter")
        await wait_for(pilot, lambda: again.panel.shown and again.panel.shown.kept_id == 1, 5)
        assert table_rows(again)[0][:2] == ["numpy", "20000"]  # the CLI run's own rows
        assert _headline(again).startswith("➜ pi ≈ ")


async def test_the_headline_goes_when_the_experiment_changes():
    app = fake_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(pilot)
        assert _headline(app) == ""
        await _run_in_tui(pilot)
        assert "standard errors" in _headline(app)
        app.open_experiment("blur")
        await pilot.pause()
        assert _headline(app) == ""
        app.open_experiment("montecarlo")
        await pilot.pause()
        assert _headline(app) == ""  # a new form, no run shown for it yet


async def test_a_store_that_cannot_be_written_keeps_the_result_on_screen(monkeypatch):
    import sqlite3

    from gpulab.store.database import Store

    def broken(self, entry):
        raise sqlite3.OperationalError("disk I/O error")

    monkeypatch.setattr(Store, "record_run", broken)
    app = fake_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await ready(pilot)
        await _run_in_tui(pilot)
        assert "standard errors" in _headline(app)
        assert table_rows(app)[0][0] == "numpy"
        assert app.query_one("#history", OptionList).option_count == 1  # listed for the session
        notes = [f"{n.title}: {n.message}" for n in app._notifications]
        assert any("Run not kept" in n and "disk I/O error" in n for n in notes), notes


async def test_a_tui_run_keeps_the_clock_and_temperature_of_its_gpu():
    from gpulab.app.app import GpuLabApp
    from gpulab.store.database import Store
    from gpulab.testing.fake_nvml import fake_sampler, worker_inventory
    from gpulab.testing.fake_runner import FakeRunner

    sampler, fake = fake_sampler("two-gpus", manual=True)
    fake.gpus[0].clocks, fake.gpus[0].temp = (1755, 2619), 61  # cuda:0 runs the job
    fake.gpus[1].clocks, fake.gpus[1].temp = (345, 2619), 30
    inv = worker_inventory(fake)
    app = GpuLabApp(
        runner_factory=lambda **kw: FakeRunner(inventory=inv, hold=True, **kw), sampler=sampler
    )
    async with app.run_test(size=(120, 40)) as pilot:
        await ready(pilot)
        await pilot.press("r")
        await wait_for(pilot, lambda: "PyTorch CPU" in app.panel.live.message, 5, "step 2")
        sampler.sample_now()  # a frame taken while the job runs
        app.runner.release()
        await wait_for(pilot, lambda: app.panel.live.finished, 5, "the run")
    with Store() as s:
        (kept,) = s.run_entries()
    tele = kept["telemetry"]
    assert tele["sm_clock_mhz"]["min"] == tele["sm_clock_mhz"]["max"] == 1755
    assert tele["temperature_c"]["max"] == 61 and tele["power_w"]["samples"] >= 1
    assert "reasons" not in tele


async def test_a_run_that_ends_before_the_kept_runs_load_is_listed_once(monkeypatch):
    from gpulab.history.entries import entry, save

    final = {"type": "cancelled", "how": "cooperative", "message": "x"}
    save(entry("montecarlo", {"samples": 1000}, final, source="cli"))
    hold = threading.Event()
    real = RunHistory._read_kept

    def slow(self):  # in the loading thread
        hold.wait(10)
        return real(self)

    monkeypatch.setattr(RunHistory, "_read_kept", slow)
    app = fake_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await ready(pilot)
        await _run_in_tui(pilot)  # finished and kept while the earlier runs are still loading
        hold.set()
        await wait_for(pilot, lambda: app.query_one(RunHistory).loaded, 10, "the kept runs")
        history = app.query_one("#history", OptionList)
        ids = [history.get_option_at_index(i).id for i in range(history.option_count)]
        assert ids == ["kept-1", "run-1"]
