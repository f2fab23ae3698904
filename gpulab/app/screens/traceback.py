"""The full story of a failed run: kind, message and the worker's traceback."""

from __future__ import annotations

from typing import Any

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.widgets import Button, Static, TextArea

from gpulab.app.screens.modal import OnceModal


class TracebackScreen(OnceModal[None]):
    """A failed run's kind, message and full traceback, over the main screen."""

    BINDINGS = [Binding("escape,q", "dismiss", "Close", id="close-traceback")]

    def __init__(self, failure: dict[str, Any]) -> None:
        super().__init__()
        self.failure = failure

    def compose(self) -> ComposeResult:
        """The failure's one line, its traceback (scrollable) and a Close button."""
        kind = self.failure.get("kind", "error")
        with Vertical(id="traceback-box"):
            yield Static(
                f"✗ {kind}: {self.failure.get('message', '')}", id="traceback-title", markup=False
            )
            yield TextArea(
                str(self.failure.get("traceback") or "(no traceback)"),
                read_only=True,
                id="traceback-text",
            )
            yield Button("Close (escape)", id="close", compact=True)

    def on_button_pressed(self, event: Button.Pressed) -> None:
        """Close the traceback."""
        event.stop()
        self.dismiss()
