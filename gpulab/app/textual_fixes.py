"""Workarounds for Textual bugs that crash the app, applied once when gpulab.app is imported.

Each one names the bug, how the monkey test (tests/test_monkey.py) or a person hit it, and what
the workaround does; tests/app/test_app_textual_fixes.py keeps each one honest. Remove a workaround
when the Textual that pyproject.toml asks for has fixed its bug (its test then still passes).
"""

from __future__ import annotations

from typing import Any

from textual.widgets import OptionList


def _page_before_layout() -> None:
    """OptionList (Textual 8.2): PageUp / PageDown before the list has been laid out.

    Its lines are built only once the list has a size, so a page key that reaches a list in the
    same moment it opens (the experiment chooser's drop-down after enter, the command palette
    after ctrl+p: two keys in one read over SSH) looked up a line that did not exist yet and
    the app died of a KeyError. Such a key now goes to the first or last option, which is where
    a page key in a short list ends anyway.
    """
    move_page = OptionList._move_page

    def _move_page(self: OptionList, direction: Any) -> None:
        highlighted = self.highlighted or 0
        if self._options and highlighted not in self._index_to_line:
            if direction < 0:
                self.action_first()
            else:
                self.action_last()
            return
        move_page(self, direction)

    OptionList._move_page = _move_page  # type: ignore[method-assign]  # the patch itself


_page_before_layout()
