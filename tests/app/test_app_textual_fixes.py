"""The workarounds in gpulab/app/textual_fixes.py, each through the keys that crashed the app.

Found by the monkey test: seed 1 at key 120 (enter on the experiment chooser, then pagedown)
and seed 2 at key 520 (ctrl+p, then pageup), both KeyError in OptionList._move_page.
"""

from __future__ import annotations

import pytest
from test_app_modal import _app, _fast, _main_ready
from textual.app import App, ComposeResult
from textual.widgets import OptionList

import gpulab.app  # noqa: F401 - applies the fixes


@pytest.mark.parametrize(
    ("pane", "keys"),
    [
        ("experiments", ("enter", "pagedown")),  # the chooser's drop-down, not drawn yet
        ("experiments", ("enter", "pageup")),
        ("lessons", ("ctrl+p", "pageup")),  # the command palette's list
        ("lessons", ("ctrl+p", "a", "pagedown")),
    ],
)
async def test_a_page_key_as_a_list_opens(pane, keys):
    app = _app()
    async with app.run_test(size=(80, 24)) as pilot:
        await _main_ready(pilot)
        app.focus_pane(pane)
        await pilot.pause()
        await _fast(pilot, *keys)


class _List(App[None]):
    def compose(self) -> ComposeResult:
        yield OptionList(*[f"option {i}" for i in range(50)])


def test_page_keys_on_a_list_not_laid_out_go_to_the_ends():
    lst = OptionList(*[f"option {i}" for i in range(50)])  # never mounted: no size, no lines
    lst.highlighted = 3
    lst.action_page_down()
    assert lst.highlighted == 49
    lst.action_page_up()
    assert lst.highlighted == 0


async def test_page_keys_on_a_laid_out_list_page_as_textual_does():
    app = _List()
    async with app.run_test(size=(40, 10)) as pilot:
        lst = app.query_one(OptionList)
        lst.highlighted = 0
        lst.focus()
        await pilot.press("pagedown")  # by the list's height, not to the end
        assert 0 < lst.highlighted < 49
