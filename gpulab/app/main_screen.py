"""The one screen: header, four panes, footer. Below 100x30 the panes take turns (tab bar)."""

from __future__ import annotations

import asyncio
from typing import Any

from textual import events, on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Container
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import Footer, Header, Tab, Tabs

from gpulab.app.commands import PANES
from gpulab.app.panes.experiments import ExperimentPanel
from gpulab.app.panes.gpu_info import GpuInfoPane
from gpulab.app.panes.lessons import LessonsPane
from gpulab.app.panes.memory_gauge import MemoryGauge

PANE_IDS = tuple(p for p, _ in PANES)
START_PANE = "experiments"


class MainScreen(Screen[None]):
    AUTO_FOCUS = ""  # show_pane focuses the starting pane itself
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (100, "-wide")]
    VERTICAL_BREAKPOINTS = [(0, "-short"), (30, "-tall")]
    BINDINGS = [
        Binding("tab", "next_pane", "Next pane", id="next-pane"),
        Binding("shift+tab", "previous_pane", "Previous pane", id="previous-pane", show=False),
    ]

    def __init__(self, *, sampler: Any = None, **kw: Any) -> None:
        super().__init__(**kw)
        self.current = START_PANE
        # Telemetry panes take a sampler; tests hand them a fake so the screen is reproducible.
        self.telemetry: dict[str, Any] = {"sampler": sampler} if sampler is not None else {}

    def compose(self) -> ComposeResult:
        yield Header(icon="▣")
        tabs = Tabs(*[Tab(label, id=f"tab-{pid}") for pid, label in PANES], id="pane-tabs")
        tabs.can_focus = False
        yield tabs
        with Container(id="panes"):
            # Grid order: the experiment panel spans the right column's three rows.
            yield GpuInfoPane(id="gpu-info", classes="pane", **self.telemetry)
            yield ExperimentPanel(id="experiments", classes="pane")
            yield LessonsPane(id="lessons", classes="pane")
            yield MemoryGauge(id="memory-gauge", classes="pane", **self.telemetry)
        yield Footer(show_command_palette=False)

    def on_mount(self) -> None:
        for pane_id, label in PANES:
            pane = self.query_one(f"#{pane_id}")
            if not pane.border_title:
                pane.border_title = label
        self.show_pane(START_PANE, focus=False)
        self.call_after_refresh(self.show_pane, START_PANE)
        ready = getattr(self.app, "main_ready", None)
        if ready is None:
            ready = self.app.main_ready = asyncio.Event()  # type: ignore[attr-defined]
        ready.set()

    @property
    def compact(self) -> bool:
        return self.has_class("-narrow") or self.has_class("-short")

    def pane(self, pane_id: str) -> Widget:
        return self.query_one(f"#{pane_id}")

    def show_pane(self, pane_id: str, *, focus: bool = True) -> None:
        """Make `pane_id` current: shown (when panes take turns), highlighted, and focused."""
        self.current = pane_id
        for pid in PANE_IDS:
            self.pane(pid).set_class(pid == pane_id, "-current")
        tabs = self.query_one("#pane-tabs", Tabs)
        if tabs.active != f"tab-{pane_id}":
            with tabs.prevent(Tabs.TabActivated):
                tabs.active = f"tab-{pane_id}"
        if focus:
            # A pane that was hidden joins the focus chain only after the next layout.
            self.call_after_refresh(self._focus_into, self.pane(pane_id))

    def _focus_into(self, pane: Widget) -> None:
        inside = [w for w in self.focus_chain if w is pane or pane in w.ancestors]
        if inside:
            inside[0].focus(scroll_visible=False)
        else:
            self.set_focus(None)

    def action_next_pane(self) -> None:
        self._step(1)

    def action_previous_pane(self) -> None:
        self._step(-1)

    def _step(self, delta: int) -> None:
        i = PANE_IDS.index(self.current) if self.current in PANE_IDS else 0
        self.show_pane(PANE_IDS[(i + delta) % len(PANE_IDS)])

    @on(Tabs.TabActivated, "#pane-tabs")
    def _tab_clicked(self, event: Tabs.TabActivated) -> None:
        event.stop()
        if event.tab and event.tab.id:
            self.show_pane(event.tab.id.removeprefix("tab-"))

    def on_descendant_focus(self, event: events.DescendantFocus) -> None:
        widget: Widget | None = event.widget
        while widget is not None and widget.id not in PANE_IDS:
            parent = widget.parent
            widget = parent if isinstance(parent, Widget) else None
        if widget is not None and widget.id != self.current:
            self.show_pane(str(widget.id), focus=False)

    def on_click(self, event: events.Click) -> None:
        widget: Widget | None = event.widget
        while widget is not None and widget.id not in PANE_IDS:
            parent = widget.parent
            widget = parent if isinstance(parent, Widget) else None
        if widget is not None and widget.id != self.current and self.focused is None:
            self.show_pane(str(widget.id), focus=False)
