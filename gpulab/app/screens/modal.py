"""Screens over the main screen that close once, however fast the keys that close them come.

Textual's `Screen.dismiss` pops whatever screen is on top. Two closing keys typed faster than
the app handles them (a double Enter or Escape over a slow SSH link, where both arrive in one
read) reach the same screen twice: the second dismiss then popped the main screen, and the app
died of a ScreenStackError (found by the monkey test, tests/test_monkey.py). A dismiss from a
screen that is no longer on top now does nothing.
"""

from __future__ import annotations

from typing import Any, TypeVar

from textual.await_complete import AwaitComplete
from textual.command import CommandList, CommandPalette, Hit
from textual.screen import ModalScreen

ResultT = TypeVar("ResultT")


def _closed_already(screen: Any) -> bool:
    return screen.app.screen is not screen


class OnceModal(ModalScreen[ResultT]):
    """A modal screen whose second dismiss does nothing."""

    def dismiss(self, result: ResultT | None = None) -> AwaitComplete:
        """Close this screen, unless it is no longer on top."""
        if _closed_already(self):
            return AwaitComplete.nothing()
        return super().dismiss(result)


def _nothing() -> None:
    """The command a second Enter selects: the first one has already run it."""


class Palette(CommandPalette):
    """The command palette, closing once: Textual runs the selected command right after it
    dismisses the palette, so a second Enter would run the command twice as well."""

    def _watch__list_visible(self) -> None:
        # Textual's command search runs in a worker that can finish after the palette's
        # widgets have gone (the monkey test, seed 2, key 160: NoMatches 'CommandList'); the
        # list it would show or hide has gone with them.
        if self.query(CommandList) and self.query("#--input"):
            super()._watch__list_visible()

    def dismiss(self, result: Any = None) -> AwaitComplete:
        """Close the palette once; a later dismiss runs no command and pops nothing."""
        if _closed_already(self):
            if self._selected_command is not None:
                self._selected_command = Hit(0, "", _nothing)
            return AwaitComplete.nothing()
        return super().dismiss(result)
