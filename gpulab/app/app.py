"""GpuLabApp: one screen, four panes."""

from __future__ import annotations

from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import Grid
from textual.widgets import Footer, Header, Static


class GpuLabApp(App):
    TITLE = "gpulab"
    CSS = """
    Grid { grid-size: 2 2; }
    .pane { border: round $accent; padding: 0 1; }
    """
    BINDINGS = [Binding("q", "quit", "Quit", id="quit")]

    def compose(self) -> ComposeResult:
        yield Header()
        with Grid():
            yield Static("GPU info", id="gpu-info", classes="pane")
            yield Static("Lessons", id="lessons", classes="pane")
            yield Static("Experiments", id="experiments", classes="pane")
            yield Static("Memory", id="memory-gauge", classes="pane")
        yield Footer()
