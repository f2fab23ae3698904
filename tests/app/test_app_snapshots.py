"""Snapshots of the main screen (80x24, 120x40, 160x48), the Explain tab maximized, and help.

Frozen on purpose: a FakeRunner plays fixed events with fixed timestamps, and the telemetry
panes read a fake NVML ("no-library": a machine without the driver), so nothing live or timed
reaches the picture. Regenerate deliberately: pytest tests/app/test_app_snapshots.py --snapshot-update
"""

from __future__ import annotations

import time

import pytest
from textual.widgets import Tabs

from gpulab.app.app import GpuLabApp
from gpulab.app.panes.gpu_info import GpuInfoPane
from gpulab.testing.fake_nvml import fake_sampler, worker_inventory
from gpulab.testing.fake_runner import FakeRunner, cpu_inventory


def frozen_app() -> GpuLabApp:
    sampler, _fake = fake_sampler("no-library")
    return GpuLabApp(runner_factory=lambda **kw: FakeRunner(**kw), sampler=sampler)


async def settle(pilot, condition, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "the app did not settle"
        await pilot.pause(0.05)


async def after_a_run(pilot) -> None:
    app = pilot.app
    await settle(pilot, lambda: app.handshake is not None and app.focused is not None)
    await pilot.press("r")
    await settle(pilot, lambda: app.panel.live is not None and app.panel.live.finished)
    # A finished run focuses the result tabs, and the focus scrolls them into view after a
    # refresh: wait for that scroll, or the picture is taken before it (at 80x24) on a fast
    # machine and after it on a loaded one.
    await settle(pilot, lambda: isinstance(app.focused, Tabs))
    await pilot.wait_for_scheduled_animations()
    await pilot.pause(0.2)
    app.clear_notifications()
    app.set_focus(None)  # no blinking cursor in the picture
    await pilot.pause()


async def explain_maximized(pilot) -> None:
    """The Explain tab of a finished run, maximized with m: the plot is drawn whole."""
    await after_a_run(pilot)
    app = pilot.app
    app.query_one("#exp-tabs").active = "tab-explain"
    await pilot.press("m")
    await settle(pilot, lambda: app.screen.maximized is not None)
    app.set_focus(None)
    await pilot.pause(0.3)  # the plot draws after its first refresh


async def help_open(pilot) -> None:
    app = pilot.app
    await settle(pilot, lambda: app.handshake is not None and app.focused is not None)
    await pilot.press("f1")
    await settle(pilot, lambda: type(app.screen).__name__ == "HelpScreen")
    await pilot.pause()


@pytest.mark.parametrize("size", [(80, 24), (120, 40), (160, 48)])
def test_main_screen_after_a_run(snap_compare, size):
    assert snap_compare(frozen_app(), terminal_size=size, run_before=after_a_run)


@pytest.mark.parametrize("size", [(80, 24), (120, 40)])
def test_explain_tab_maximized(snap_compare, size):
    assert snap_compare(frozen_app(), terminal_size=size, run_before=explain_maximized)


def test_help_screen(snap_compare):
    assert snap_compare(frozen_app(), terminal_size=(100, 30), run_before=help_open)


def four_gpu_app() -> GpuLabApp:
    """The lab on a fake host of four H200s joined by NVSwitch (NV18 between every pair)."""
    sampler, fake = fake_sampler("nvlink-4", manual=True)
    inventory = {**cpu_inventory(), **worker_inventory(fake)}
    app = GpuLabApp(
        runner_factory=lambda **kw: FakeRunner(inventory=inventory, **kw), sampler=sampler
    )
    app.fake_nvml = fake  # type: ignore[attr-defined]
    return app


async def gpu_pane_maximized(pilot) -> None:
    """Two frames with NVLink traffic on GPU 0 between them, then m on the GPU list."""
    app = pilot.app
    await settle(pilot, lambda: app.handshake is not None and bool(app.query(GpuInfoPane)))
    pane = app.query_one(GpuInfoPane)
    app.sampler.sample_now()
    await settle(pilot, lambda: pane.frame is not None)
    app.fake_nvml.nvlink_traffic(1.0, {0: (160e9, 155e9)})
    pane._live_at = 0.0  # the repaint period is the pane's, not the test's
    first = pane.frame
    app.sampler.sample_now()
    await settle(pilot, lambda: pane.frame is not first)
    app.query_one("#gpu-list").focus()
    await pilot.press("m")
    await settle(pilot, lambda: app.screen.maximized is pane)
    app.set_focus(None)
    await pilot.pause()


def test_gpu_pane_on_a_four_gpu_host(snap_compare):
    """The GPU pane given the whole screen at 120x40 on four NVLink GPUs: the live NVLink
    traffic against the links' figure, the NV18 matrix, the NUMA nodes and their CPUs."""
    assert snap_compare(four_gpu_app(), terminal_size=(120, 40), run_before=gpu_pane_maximized)
