"""A new pane is one entry in the pane table (gpulab.app.pane_table): the screen, its tabs, its
wide grid, the help, the palette and the shared state all follow it. Every wait is for a
condition, never a fixed sleep."""

from __future__ import annotations

from typing import Any

from test_app import ready, wait_for
from textual.binding import Binding
from textual.widgets import Static

from gpulab.app.app import GpuLabApp
from gpulab.app.main_screen import MainScreen
from gpulab.app.pane_table import PANES, PaneSpec
from gpulab.app.screens.help import help_sections
from gpulab.testing.fake_runner import FakeRunner

NOTES = PaneSpec("notes", "Notes", f"{__name__}:NotesPane", takes=("handshake", "device"))


class NotesPane(Static, can_focus=True):
    """A pane a contributor adds: it shows the worker's pid from the shared state."""

    BINDINGS = [Binding("w", "write", "Write a note", id="notes.write")]

    def __init__(self, **kw: Any) -> None:
        super().__init__("no worker yet", **kw)
        self.handshake: dict[str, Any] | None = None
        self.device: int | None = None

    def on_mount(self) -> None:
        """Show what the state says once mounted (the screen set it just before)."""
        self.update(f"worker {(self.handshake or {}).get('pid')}")

    def action_write(self) -> None:
        """A key of its own, for the help to list."""


class NotesScreen(MainScreen):
    PANES = (*PANES, NOTES)


class NotesApp(GpuLabApp):
    def get_default_screen(self) -> MainScreen:
        return NotesScreen(before_panes=self._open_store)


def _app() -> NotesApp:
    return NotesApp(runner_factory=lambda **rk: FakeRunner(**rk))


async def test_one_table_entry_adds_a_pane_everywhere():
    app = _app()
    async with app.run_test(size=(160, 48)) as pilot:
        await ready(pilot)
        screen = app.main
        await wait_for(pilot, lambda: bool(screen.query("#notes")), 10, "the notes pane")
        pane = screen.query_one("#notes", NotesPane)
        # the shared state it names reaches it, and follows the state
        await wait_for(pilot, lambda: pane.handshake is app.handshake, 10, "the handshake")
        app.device = 1
        assert pane.device == 1
        # its shell, border title and tab
        assert screen.shell("notes").border_title == "Notes"
        assert screen.query_one("#tab-notes")
        # the wide grid makes a row for it in the left column; the right column spans them all
        panes = screen.query_one("#panes")
        assert panes.styles.grid_size_rows == 4
        heights = {screen.shell(p).outer_size.height for p in ("gpu-info", "lessons", "notes")}
        assert max(heights) - min(heights) <= 1
        right = screen.shell("experiments").outer_size.height
        assert right >= sum(screen.shell(p).outer_size.height for p in ("gpu-info", "notes")) * 2
        # tab reaches it, in the table's order: after the memory gauge, before the GPU info
        seen = [screen.current]
        for _ in screen.pane_ids:
            await pilot.press("tab")
            await pilot.pause()
            seen.append(screen.current)
        i = seen.index("notes")
        assert seen[i - 1] == "memory-gauge" and seen[i + 1] == "gpu-info", seen
        assert len(set(seen)) == len(screen.pane_ids)
        # the help lists its keys under its title, and the palette can focus it
        titles = {s.title: s for s in help_sections(app, screen.PANES)}
        assert "Notes pane" in titles
        keys = [k for row in titles["Notes pane"].rows for k in row.keys]
        assert ("w", "Write a note") in keys
        from gpulab.app.commands import GpuLabCommands

        names = [name for name, _cb, _help in GpuLabCommands(app.screen)._commands()]
        assert "Focus pane: Notes" in names


async def test_the_lab_has_the_table_s_panes_in_its_order():
    app = _app()
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(pilot)
        assert app.main.pane_ids == (*(p.id for p in PANES), "notes")
        tabs = [t.id for t in app.main.query("#pane-tabs Tab")]
        assert tabs == [f"tab-{p}" for p in app.main.pane_ids]
