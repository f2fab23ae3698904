"""Dialogs close once: two closing keys typed faster than the app handles them (both arrive in
one read over a slow link) used to pop the main screen too, and the app died of a
ScreenStackError. Found by the monkey test (seed 0, key 120: ctrl+p ... enter enter)."""

from __future__ import annotations

from typing import Any

import pytest
from test_monkey import type_fast

from gpulab.app.app import GpuLabApp
from gpulab.app.main_screen import MainScreen
from gpulab.app.screens.help import HelpScreen
from gpulab.app.screens.quiz import QuizScreen
from gpulab.testing.fake_runner import FakeRunner


def _app() -> GpuLabApp:
    return GpuLabApp(runner_factory=lambda **kw: FakeRunner(**kw))


async def _main_ready(pilot: Any) -> None:
    for _ in range(400):
        if pilot.app.main_ready is not None and pilot.app.main_ready.is_set():
            return
        await pilot.pause(0.02)
    raise AssertionError("the main screen never mounted")


async def _fast(pilot: Any, *keys: str) -> None:
    for key in keys:
        type_fast(pilot.app, key)
    await pilot.pause()
    await pilot.pause(0.2)
    assert pilot.app._exception is None, pilot.app._exception
    assert pilot.app.is_running


@pytest.mark.parametrize(
    ("keys", "on_top"),
    [
        # the palette: pick Help, then Enter again before the palette has gone
        (("ctrl+p", *"help", "enter", "enter"), HelpScreen),
        (("ctrl+p", "down", "enter", "enter"), None),
        # help opened and closed twice over
        (("f1", "escape", "escape"), MainScreen),
        (("f1", "escape", "escape", "f1", "escape", "escape", "escape"), MainScreen),
    ],
)
async def test_a_double_close_closes_one_dialog(keys, on_top):
    app = _app()
    async with app.run_test(size=(80, 24)) as pilot:
        await _main_ready(pilot)
        if keys[0] == "ctrl+p":
            # The palette searches in a worker: an Enter before its first result picks nothing
            # (on a loaded box that happened). Type the search, wait for a result, then send the
            # two Enters in one burst, which is the race this test is about.
            cut = keys.index("enter")
            await _fast(pilot, *keys[:cut])
            for _ in range(250):
                found = [w for w in app.screen.query("CommandList") if w.option_count]
                if found:
                    break
                await pilot.pause(0.02)
            keys = keys[cut:]
        await _fast(pilot, *keys)
        assert isinstance(app.screen_stack[0], MainScreen)
        if on_top is not None:
            assert isinstance(app.screen, on_top)
        # the palette's command ran once: one help screen, not two
        assert len(app.screen_stack) <= 2


async def test_the_quiz_closes_once():
    app = _app()
    async with app.run_test(size=(80, 24)) as pilot:
        await _main_ready(pilot)
        app.open_lesson("why-gpus")
        await pilot.pause()
        lessons = app.screen.query_one("#lessons")
        lessons.action_quiz()
        await pilot.pause()
        assert isinstance(app.screen, QuizScreen)
        await _fast(pilot, "escape", "escape", "escape")
        assert isinstance(app.screen, MainScreen) and len(app.screen_stack) == 1


async def test_the_palette_survives_its_search_ending_after_its_list_has_gone():
    """Seed 2 of the monkey, key 160: the palette's search worker ended after the palette's
    widgets had been removed, and showing its (gone) list raised NoMatches."""
    from textual.command import CommandList

    app = _app()
    async with app.run_test(size=(80, 24)) as pilot:
        await _main_ready(pilot)
        await _fast(pilot, "ctrl+p", "e")
        palette = app.screen
        await palette.query_one(CommandList).remove()
        palette._list_visible = not palette._list_visible  # what the search's end does
        await pilot.pause()
        assert app._exception is None and app.is_running
