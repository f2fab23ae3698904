"""The one screen: header, the panes of the pane table, footer. Below 100x30 the panes take
turns (tab bar).

On a wide screen the right column holds the experiment panel or the exercises, whichever was
shown last: both want the room, and the GPU figures, lessons and memory gauge stay in view.
The tabs, the shells, the grid and the panes all come from `pane_table.PANES` (the class
attribute `PANES`, which a test may extend); each pane gets the shared state its entry names
(`takes`) from the app's `LabState`, kept current by a watch: attributes down.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from textual import events, on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Container
from textual.screen import Screen
from textual.widget import MountError, Widget
from textual.widgets import Footer, Header, Static, Tab, Tabs
from textual.widgets._footer import FooterKey

from gpulab.app import messages
from gpulab.app.pane_table import PANES, START_PANE, PaneSpec

# The lab's own footer keys, most important first: when the footer is too narrow for every
# key, these stay and the focused pane's keys give way (F1 lists every key).
FOOTER_KEEP = ("quit", "help", "cancel", "run", "next_pane", "command_palette")


class LabFooter(Footer):
    """A footer that keeps quit (and the lab's other keys) in view at any width.

    Textual's footer shows one key per action, in the order of the focus chain, and cuts what
    does not fit: at 80 columns the lessons pane's four keys pushed r, esc and q off the edge.
    Here the app's and the screen's keys are kept first (quit above all), the focused widget's
    keys fill the room that is left, and of two keys for one action the plain one is shown
    (q rather than ^q; ^q where a text field takes q)."""

    _keys: tuple[tuple[Any, ...], ...] | None = None  # what compose last showed

    def _shown(self) -> tuple[list[tuple[Any, Binding, bool, str]], tuple[tuple[Any, ...], ...]]:
        """The items that fit the width, and what the footer shows of them."""
        items = self._items()
        fit = self._fit(items, self.size.width or self.app.size.width)
        kept = [item for item in items if item[1] in fit]
        keys = tuple(
            (b.key, self.app.get_key_display(b), b.description, b.action, enabled, tooltip)
            for _node, b, enabled, tooltip in kept
        )
        return kept, keys

    def compose(self) -> ComposeResult:
        """The keys that fit the width, in the order above."""
        if not self._bindings_ready:
            return
        kept, self._keys = self._shown()
        for _node, binding, enabled, tooltip in kept:
            yield FooterKey(
                binding.key,
                self.app.get_key_display(binding),
                binding.description,
                binding.action,
                disabled=not enabled,
                tooltip=tooltip,
            ).data_bind(compact=Footer.compact)

    def _items(self) -> list[tuple[Any, Binding, bool, str]]:
        """One (namespace, binding, enabled, tooltip) per action, in display order."""
        by_action: dict[str, list[tuple[Any, Binding, bool, str]]] = {}
        for namespace, binding, enabled, tooltip in self.screen.active_bindings.values():
            if binding.show:
                by_action.setdefault(binding.action, []).append(
                    (namespace, binding, enabled, tooltip)
                )
        spaces: list[Any] = []
        items = []
        for choices in by_action.values():
            item = next((c for c in choices if not c[1].priority), choices[0])
            if item[0] not in spaces:
                spaces.append(item[0])
            items.append(item)

        def order(item: tuple[Any, Binding, bool, str]) -> tuple[int, int]:
            declared = [b.key for b in _declared(type(item[0]))]
            key = item[1].key
            return spaces.index(item[0]), declared.index(key) if key in declared else 0

        return sorted(items, key=order)

    def _fit(self, items: list[tuple[Any, Binding, bool, str]], width: int) -> set[Binding]:
        def rank(item: tuple[Any, Binding, bool, str]) -> int:
            action = item[1].action
            if item[0] is self.app or item[0] is self.screen:
                return FOOTER_KEEP.index(action) if action in FOOTER_KEEP else len(FOOTER_KEEP)
            return len(FOOTER_KEEP) + 1  # the focused widget's keys: in the room left

        shown: set[Binding] = set()
        used = 0
        for item in sorted(items, key=rank):
            binding = item[1]
            cost = len(self.app.get_key_display(binding)) + len(binding.description) + 3
            if used + cost <= width:
                shown.add(binding)
                used += cost
        return shown

    def bindings_changed(self, screen: Screen[Any]) -> None:
        """Recompose only when what the footer shows changes: Textual's footer rebuilds its
        keys on every change of the active bindings (a pane switch at 80x24 announced several,
        and rebuilding and restyling the same keys each time took most of the switch's CPU)."""
        self._bindings_ready = True
        if not screen.app.app_focus:
            return
        if self.is_attached and screen is self.screen:
            self.call_after_refresh(self._refresh_keys)

    def on_resize(self) -> None:
        """Choose again which keys fit."""
        if self._bindings_ready and self.is_attached:
            self.call_after_refresh(self._refresh_keys)

    async def _refresh_keys(self) -> None:
        if self.is_attached and self._shown()[1] != self._keys:
            await self.recompose()


def _setter(pane: Widget, name: str) -> Callable[[Any], None]:
    """A watcher that gives `pane` the state's new value of `name`."""

    def give(value: Any) -> None:
        setattr(pane, name, value)

    return give


def _declared(cls: type) -> list[Binding]:
    out: list[Binding] = []
    for klass in cls.__mro__:
        out += Binding.make_bindings(klass.__dict__.get("BINDINGS", []))
    return out


class MainScreen(Screen[None]):
    """The lab's one screen: the pane tabs and the panes, which take turns or sit side by side by
    size."""

    AUTO_FOCUS = ""  # show_pane focuses the starting pane itself
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (100, "-wide")]
    VERTICAL_BREAKPOINTS = [(0, "-short"), (30, "-tall")]
    BINDINGS = [
        Binding("tab", "next_pane", "Next pane", id="next-pane"),
        Binding("shift+tab", "previous_pane", "Previous pane", id="previous-pane", show=False),
        Binding("x", "exercises", "Exercises", id="exercises", show=False),
    ]

    PANES: tuple[PaneSpec, ...] = PANES  # the table the screen is built from

    def __init__(
        self,
        *,
        sampler: Any = None,
        sample_period: float | None = None,
        before_panes: Callable[[], None] | None = None,
        **kw: Any,
    ) -> None:
        """`before_panes`: the app's, called once the first frame is up, before the panes mount
        (it opens the store they share)."""
        super().__init__(**kw)
        self.before_panes = before_panes
        self.current = START_PANE
        # Telemetry panes take a sampler; tests hand them a fake so the screen is reproducible.
        self.telemetry: dict[str, Any] = {"sampler": sampler} if sampler is not None else {}
        self.sample_period = sample_period

    def _breakpoint_classes(self) -> None:
        """Set the size classes before the first layout: setting them later restyles every
        widget once more, which was most of the time to the first frame."""
        width, height = self.app.size
        self.set_class(width < 100, "-narrow")
        self.set_class(width >= 100, "-wide")
        self.set_class(height < 30, "-short")
        self.set_class(height >= 30, "-tall")

    @property
    def pane_ids(self) -> tuple[str, ...]:
        """The panes' ids, in the table's order (the tabs', and tab's)."""
        return tuple(p.id for p in self.PANES)

    def compose(self) -> ComposeResult:
        """Header, pane tabs, a shell per pane and the footer; the panes mount after the first
        frame."""
        self._breakpoint_classes()
        yield Header(icon="▣")
        tabs = Tabs(
            *[Tab(p.title, id=f"tab-{p.id}") for p in self.PANES],
            active=f"tab-{self.current}",
            id="pane-tabs",
        )
        tabs.can_focus = False
        yield tabs
        left = [p for p in self.PANES if p.column == "left"]
        right = [p for p in self.PANES if p.column == "right"]
        panes = Container(id="panes")
        # The wide grid: a row per left pane; a right pane spans them all (one shows at a time)
        panes.styles.grid_size_rows = len(left)
        panes.styles.grid_rows = " ".join(["1fr"] * len(left))
        with panes:
            # Shells first: they paint the layout at once; the panes (and their imports)
            # mount right after the first frame. Grid order: the first left pane, then the
            # right column's (the starting one first), then the other left panes; the grid
            # places only those displayed.
            right.sort(key=lambda p: p.id != START_PANE)
            for spec in [*left[:1], *right, *left[1:]]:
                shell = Container(
                    id=f"shell-{spec.id}", classes=self._classes_for(spec, spec is right[0])
                )
                if spec.column == "right":
                    shell.styles.row_span = len(left)
                with shell:
                    yield Static("loading…", classes="pane-loading")
        yield LabFooter(show_command_palette=False)

    def _classes_for(self, spec: PaneSpec, shown: bool) -> str:
        classes = ["pane"]
        if spec.id == self.current:
            classes.append("-current")
        if spec.column == "right":
            classes.append("-right -shown" if shown else "-right")
        return " ".join(classes)

    def on_mount(self) -> None:
        """Title each pane's shell and mount the panes once the first frame is up."""
        for spec in self.PANES:
            self.shell(spec.id).border_title = spec.title
        self.call_after_refresh(self._mount_panes)

    async def _mount_panes(self) -> None:
        if self.sample_period is not None:
            # deferred: the sampler's thread starts with the panes, after the first frame
            from gpulab.telemetry.sampler import shared_sampler

            sampler = self.telemetry.setdefault("sampler", shared_sampler())
            sampler.set_interval(self.sample_period)
        if self.before_panes is not None:
            self.before_panes()
        # In the grid's order, as before the table: the panes' mount order is what the first
        # frames after it show.
        order = [s.id for s in self.query("#panes > .pane")]
        for spec in sorted(self.PANES, key=lambda s: order.index(f"shell-{s.id}")):
            shell = self.shell(spec.id)
            if not shell.is_attached:  # the app is already exiting
                return
            pane = spec.load()(id=spec.id, **(self.telemetry if spec.telemetry else {}))
            for name in spec.takes:  # before the pane mounts: its on_mount reads them
                self.watch(self.app, name, _setter(pane, name), init=True)
            await shell.query(".pane-loading").remove()
            try:
                await shell.mount(pane)
            except MountError:
                if shell.is_attached:
                    raise
                return
        self.call_after_refresh(self.show_pane, self.current)
        self.post_message(messages.PanesMounted())

    @property
    def compact(self) -> bool:
        """Whether the screen is narrow or short, so panes take turns."""
        return self.has_class("-narrow") or self.has_class("-short")

    def pane(self, pane_id: str) -> Widget:
        """The pane widget with id `pane_id`."""
        return self.query_one(f"#{pane_id}")

    def shell(self, pane_id: str) -> Widget:
        """The bordered container that holds pane `pane_id`."""
        return self.query_one(f"#shell-{pane_id}")

    def show_pane(self, pane_id: str, *, focus: bool = True) -> None:
        """Make `pane_id` current: shown (when panes take turns), highlighted, and focused."""
        self.current = pane_id
        if self.shell(pane_id).has_class("-right"):  # the right column shows it from now on
            for shell in self.query(".pane.-right"):
                self._shell_class(shell, shell.id == f"shell-{pane_id}", "-shown")
        for pid in self.pane_ids:
            shell = self.shell(pid)
            if shell.has_class("-current") != (pid == pane_id):
                self._shell_class(shell, pid == pane_id, "-current")
        tabs = self.query_one("#pane-tabs", Tabs)
        if tabs.active != f"tab-{pane_id}":
            with tabs.prevent(Tabs.TabActivated):
                tabs.active = f"tab-{pane_id}"
        if focus:
            # A pane that was hidden joins the focus chain only after the next layout.
            self.call_after_refresh(self._focus_into, self.shell(pane_id))

    def _shell_class(self, shell: Widget, add: bool, name: str) -> None:
        """Set or clear a class of a pane's shell and restyle the shell alone: the lab's CSS
        reads -current and -shown on the shell only (gpulab.tcss), and Textual restyles every
        descendant on a class change (a lesson's document, the exercise table: most of a pane
        switch's CPU at 80x24)."""
        if shell.has_class(name) != add:
            shell.set_class(add, name, update=False)
            self.app.stylesheet.update_nodes([shell], animate=True)

    def _focus_into(self, pane: Widget) -> None:
        for child in pane.children:
            chooser = getattr(child, "focus_target", None)  # a pane may name its first stop
            target = chooser() if callable(chooser) else None
            if target is not None and target.focusable:
                target.focus(scroll_visible=False)
                return
        inside = [w for w in self.focus_chain if w is pane or pane in w.ancestors]
        if inside:
            inside[0].focus(scroll_visible=False)
        else:
            self.set_focus(None)

    def action_next_pane(self) -> None:
        """Show the next pane."""
        self._step(1)

    def action_exercises(self) -> None:
        """Show the exercises pane."""
        self.show_pane("exercises")

    def action_previous_pane(self) -> None:
        """Show the previous pane."""
        self._step(-1)

    def _step(self, delta: int) -> None:
        ids = self.pane_ids
        i = ids.index(self.current) if self.current in ids else 0
        self.show_pane(ids[(i + delta) % len(ids)])

    @on(Tabs.TabActivated, "#pane-tabs")
    def _tab_clicked(self, event: Tabs.TabActivated) -> None:
        event.stop()
        # Tabs also announces its first active tab on mount: only a change moves us.
        pane_id = event.tab.id.removeprefix("tab-") if event.tab and event.tab.id else ""
        if pane_id and pane_id != self.current:
            self.show_pane(pane_id)

    def on_descendant_focus(self, event: events.DescendantFocus) -> None:
        """Make the pane that took focus the current one, if it still holds focus. Events
        bubble late: leaving the lessons pane handed focus to its hidden filter for a moment
        (Textual's reset after the tree hid), and that focus, arriving after the exercises
        table had taken focus, made the lessons current again, hid the table (a Hide blurs) and
        left the keyboard nowhere, about one Tab to Exercises in three at 80x24."""
        if event.widget is not self.focused:
            return
        pane_id = self._pane_of(event.widget)
        if pane_id and pane_id != self.current:
            self.show_pane(pane_id, focus=False)

    @staticmethod
    def _pane_of(widget: Widget | None) -> str:
        while widget is not None:
            if widget.id and widget.id.startswith("shell-"):
                return widget.id.removeprefix("shell-")
            parent = widget.parent
            widget = parent if isinstance(parent, Widget) else None
        return ""

    def on_click(self, event: events.Click) -> None:
        """Make a clicked pane current when nothing has focus."""
        pane_id = self._pane_of(event.widget)
        if pane_id and pane_id != self.current and self.focused is None:
            self.show_pane(pane_id, focus=False)
