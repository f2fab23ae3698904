"""The explain card under a check's verdict: why this speed, one line per finding.

It only draws lines gpulab.explain.card made (in a thread, off the UI's event loop) and the
progress of an Nsight Compute pass; it never computes anything itself.
"""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual.widgets import Static

MARK_STYLE = {"!!": "bold red", "! ": "yellow", "? ": "cyan"}


class ExplainCard(Static):
    """Hidden until there is something to show."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.lines: list[str] = []

    def show_lines(self, lines: list[str]) -> None:
        self.lines = list(lines)
        text = Text(no_wrap=True, overflow="ellipsis")
        for i, line in enumerate(self.lines):
            if i == 0:
                text.append(line, style="bold")
            else:
                text.append(line, style=MARK_STYLE.get(line[:2], ""))
            if i < len(self.lines) - 1:
                text.append("\n")
        self.update(text)
        self.set_class(bool(self.lines), "-shown")

    def show_progress(self, message: str) -> None:
        self.show_lines(["Why this speed (Nsight Compute):", f"  {message}", "  escape cancels"])

    def clear(self) -> None:
        self.show_lines([])
