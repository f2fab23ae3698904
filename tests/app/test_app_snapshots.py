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
from gpulab.testing.fake_nvml import fake_sampler
from gpulab.testing.fake_runner import FakeRunner


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
