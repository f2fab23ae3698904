"""The GPU info pane (#gpu-info): every GPU in a list, the highlighted one's figures below.

Static facts come from NVML once (cached by the sampler) and are joined with what the worker's
handshake reports (SM count, L2, CUDA index, torch / CUDA runtime / CuPy versions); live readings
arrive as frames from the telemetry thread. Up/down (or the mouse) move the highlight and show
that GPU's figures (and its row of the links between the GPUs: gpu_links.py); m gives the pane
the whole screen; Enter or a click selects it for experiments and posts
`messages.GpuChosen`; NVML's list, once read, goes up as `messages.GpusRead`.
Without NVML the pane explains CPU mode and what to install instead of showing a blank.

Which GPU starts selected is the worker's: its CUDA device 0 (the default device of a run),
matched to NVML's list by UUID, since CUDA_VISIBLE_DEVICES or CUDA's own ordering can make
CUDA 0 any NVML index. A GPU the worker cannot see (its CUDA index reads N/A) cannot be
selected: a person gets a one-line notification saying why, and the selection stays.

This module is the widget: its state, the selection and when to repaint. The words and tables
it shows are built by `gpu_tables.py`, the glance (bars and sparklines) by `gpu_glance.py`.
"""

from __future__ import annotations

import time
from typing import Any

from rich.console import Group
from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.message import Message
from textual.reactive import var
from textual.widgets import OptionList, Static

from gpulab.app import messages
from gpulab.app.panes.gpu_glance import History, glance, processes
from gpulab.app.panes.gpu_links import links_rows, links_view, measured_peer, reference
from gpulab.app.panes.gpu_tables import (
    backends_table,
    details_table,
    gpu_prompt,
    header,
    live_table,
    short_name,
    snap_key,
    versions_table,
)
from gpulab.app.panes.stale import WATCH_S, StaleWatch, marker
from gpulab.telemetry.inventory import GpuInventory, SystemInventory
from gpulab.telemetry.sampler import Frame, Sampler, Stale, shared_sampler
from gpulab.telemetry.snapshot import GpuSnapshot
from gpulab.telemetry.values import NA

# Live figures (power, temperature...) repaint at most this often: every 2 s while idle, every
# frame (2 Hz) while a job holds the sampler fast.
LIVE_PERIOD_S = 2.0
LIVE_PERIOD_JOB_S = 0.5


class GpuInfoPane(Vertical):
    """Every GPU in a list, the highlighted one's facts and live figures, and the processes on it."""

    ALLOW_MAXIMIZE = True
    BINDINGS = [
        Binding("i", "facts", "GPU facts", id="gpu-info.facts"),
        Binding("m", "maximize", "Maximize", id="gpu-info.maximize", show=False),
    ]
    handshake: var[dict[str, Any] | None] = var(None)
    """The worker's hello: CUDA indices, SM counts and versions to join to NVML's list."""
    device_index: var[int] = var(0)
    """The CUDA device the worker runs on by default: selected until a person chooses."""
    runs: var[tuple[Any, ...]] = var(())
    """This session's finished runs: a p2p run's measured copy rate is the NVLink figure."""

    class FrameArrived(Message, bubble=False):
        """A telemetry frame, posted from the sampler's thread."""

        def __init__(self, frame: Frame) -> None:
            self.frame = frame
            super().__init__()

        def can_replace(self, message: Message) -> bool:
            """A newer frame replaces one still queued: only the latest matters."""
            return isinstance(message, GpuInfoPane.FrameArrived)

    def __init__(self, *, sampler: Sampler | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._sampler = sampler
        self._unsubscribe: Any = None
        self.worker: dict[str, Any] | None = None
        self.frame: Frame | None = None
        self.inventory: SystemInventory | None = None
        self.selected_nvml = 0
        self.highlighted_nvml = 0
        self.chosen = False  # a person selected a GPU: the worker's default no longer applies
        self._initial_posted: int | None = None
        self._prompts: list[str] = []
        self._keys: dict[str, Any] = {}
        self._shown: dict[str, Any] = {}  # what each Static shows (tests read it)
        self._status_text = ""
        self._static_key: Any = None
        self._live_at = 0.0
        self.stale = StaleWatch()
        self._said: set[Any] = set()  # the problems already notified
        self.stale_text = ""  # the marker shown above the list ("" when all is current)
        self.histories: dict[int, History] = {}  # per NVML index: the sparklines' points
        self.measured: float | None = None  # bytes/s, from this session's newest p2p run

    @property
    def sampler(self) -> Sampler:
        """The telemetry sampler (the shared one unless a test gave one)."""
        if self._sampler is None:
            self._sampler = shared_sampler()
        return self._sampler

    def compose(self) -> ComposeResult:
        """The status line, the stale marker, the GPU list and the highlighted GPU's figures."""
        yield Static("Reading NVML…", id="gpu-status")
        yield Static("", id="gpu-stale", markup=False)
        yield OptionList(id="gpu-list")
        with VerticalScroll(id="gpu-glance-box", can_focus=False):
            yield Static("", id="gpu-glance")
            yield Static("", id="gpu-links")
            yield Static("", id="gpu-procs")
            yield Static("i: facts and versions · m: maximize", id="gpu-keys", markup=False)
        with VerticalScroll(id="gpu-scroll"):
            yield Static("", id="gpu-details")
            yield Static("", id="gpu-live")
            yield Static("", id="gpu-versions")

    def on_mount(self) -> None:
        """Subscribe to the sampler and start the watchdog for a silent sampler."""
        self.query_one("#gpu-list", OptionList).display = False
        self.query_one("#gpu-stale").display = False
        self.stale.saw_frame()
        self._unsubscribe = self.sampler.subscribe(self._from_thread)
        if not self.sampler.manual:
            self.set_interval(WATCH_S, self._watchdog, name="telemetry watchdog")

    def on_unmount(self) -> None:
        """Stop hearing the sampler."""
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None

    # the lab's state, as the screen hands it down ---------------------------------------------
    def watch_handshake(self, handshake: dict[str, Any] | None) -> None:
        if handshake is not None:
            self.set_worker_info(handshake)

    def watch_runs(self, runs: tuple[Any, ...]) -> None:
        measured = measured_peer(runs)
        if measured != self.measured:
            self.measured = measured
            self._static_key = None
            self._redraw()

    def set_worker_info(self, handshake: dict[str, Any]) -> None:
        """Join the worker's handshake (CUDA indices, SM count, versions) to NVML's list."""
        self.worker = dict(handshake or {})
        self._join()
        self._redraw()

    @property
    def selected(self) -> GpuInventory | None:
        """The selected GPU's inventory entry, or None before NVML answers."""
        return self.inventory.gpu(self.selected_nvml) if self.inventory else None

    # frames ---------------------------------------------------------------------------------
    def _from_thread(self, frame: Frame) -> None:
        self.post_message(self.FrameArrived(frame))

    @on(FrameArrived)
    def _frame(self, message: FrameArrived) -> None:
        first = self.frame is None or self.frame.inventory is not message.frame.inventory
        self.frame = message.frame
        self.stale.saw_frame()
        if first:
            self._join()
        self._show_problems()
        self._redraw()

    # figures that are not current ------------------------------------------------------------
    def _watchdog(self) -> None:
        if self.stale.check(self.sampler):
            self._show_problems()

    def _show_problems(self) -> None:
        """The marker above the list, and one notification per new problem (and recovery)."""
        problems = self.stale.problems(self.frame)
        lines = [marker(why, self._gpu_label(i)) for i, why in problems]
        text = "\n".join(lines)
        if text != self.stale_text:
            self.stale_text = text
            stale = self.query_one("#gpu-stale", Static)
            stale.update(text)
            stale.display = bool(text)
        for index, why in problems:
            key = (index, why)
            if key not in self._said:
                self._said.add(key)
                self.notify(
                    marker(why, self._gpu_label(index)),
                    title="GPU telemetry",
                    severity="error",
                    timeout=10,
                )
        if not any(i is None for i, _ in problems) and any(k[0] is None for k in self._said):
            self._said = {k for k in self._said if k[0] is not None}
            self.notify("GPU telemetry is current again.", title="GPU telemetry")

    def _gpu_label(self, nvml_index: int | None) -> str | None:
        if nvml_index is None:
            return None
        g = self.inventory.gpu(nvml_index) if self.inventory else None
        if g is not None and isinstance(g.cuda_index, int):
            return f"cuda:{g.cuda_index}"
        return f"nvml:{nvml_index}"

    def problem(self, nvml_index: int) -> Stale | None:
        """Why GPU `nvml_index`'s figures are not current, or None when they are."""
        return self.stale.problem(self.frame, nvml_index)

    def _join(self) -> None:
        if self.frame is None:
            return
        inv = self.frame.inventory
        self.inventory = inv.with_worker((self.worker or {}).get("inventory"))
        self.post_message(messages.GpusRead(self.inventory))  # the lessons' figures use it
        self._default_selection()

    def _default_selection(self) -> None:
        """Until a person chooses, the selection is the GPU the worker runs on by default."""
        inv = self.inventory
        if self.chosen or inv is None or not inv.gpus:
            return
        g = next((g for g in inv.gpus if g.cuda_index == self.device_index), None)
        if g is None:
            return
        if g.nvml_index != self.selected_nvml:
            self.selected_nvml = self.highlighted_nvml = g.nvml_index
            self._highlight_option(g.nvml_index)
        if self._initial_posted != g.nvml_index:
            self._initial_posted = g.nvml_index
            self.post_message(self._selected_message(g, initial=True))

    def _selected_message(self, g: GpuInventory, *, initial: bool = False) -> messages.GpuChosen:
        assert isinstance(g.cuda_index, int)
        return messages.GpuChosen(
            g.cuda_index,
            g.nvml_index,
            gpus=len(self.inventory.gpus) if self.inventory else 1,
            initial=initial,
        )

    def _highlight_option(self, nvml_index: int) -> None:
        if not self.is_mounted or self.inventory is None:
            return
        options = self.query_one("#gpu-list", OptionList)
        at = next((i for i, g in enumerate(self.inventory.gpus) if g.nvml_index == nvml_index), 0)
        if options.option_count > at and options.highlighted != at:
            options.highlighted = at

    # selection ------------------------------------------------------------------------------
    @on(OptionList.OptionHighlighted, "#gpu-list")
    def _highlight(self, event: OptionList.OptionHighlighted) -> None:
        event.stop()
        if self.inventory and 0 <= event.option_index < len(self.inventory.gpus):
            self.highlighted_nvml = self.inventory.gpus[event.option_index].nvml_index
            self._redraw()

    @on(OptionList.OptionSelected, "#gpu-list")
    def _select(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        if not self.inventory or not 0 <= event.option_index < len(self.inventory.gpus):
            return
        g = self.inventory.gpus[event.option_index]
        if isinstance(g.cuda_index, NA):
            # Its NVML index is not a CUDA index the worker could use: running "there" would
            # silently run on another GPU. Refuse, and say why.
            self.notify(
                f"Cannot run on nvml:{g.nvml_index} {short_name(g.name)}: {g.cuda_index.reason}",
                title="GPU not selectable",
                severity="warning",
            )
            return
        self.chosen = True
        self.selected_nvml = self.highlighted_nvml = g.nvml_index
        self.post_message(self._selected_message(g))
        self._redraw()

    # drawing --------------------------------------------------------------------------------
    def _redraw(self) -> None:
        if not self.is_mounted:
            return
        status = self.query_one("#gpu-status", Static)
        options = self.query_one("#gpu-list", OptionList)
        inv = self.inventory
        if inv is None:
            return
        self.set_class(not inv.available or not inv.gpus, "-cpu")  # no live figures to show
        if not inv.available or not inv.gpus:
            options.display = False
            self._status(status, Text(inv.reason or "NVML sees no GPU", style="bold yellow"))
            self._set(
                "gpu-details", ("cpu", self._worker_key()), lambda: backends_table(self.worker)
            )
            self._set("gpu-live", "cpu", lambda: "")
            self._set("gpu-versions", ("cpu", self._worker_key()), lambda: versions_table(inv))
            return
        # Power and temperature wobble every frame on a real GPU: repainting them at 2 Hz was
        # most of the idle UI's cost, so only a change a person caused repaints at once.
        static_key = (
            id(inv),
            self.selected_nvml,
            self.highlighted_nvml,
            self._worker_key(),
            len(inv.gpus),
            self.stale_text,  # a GPU lost, or reads failing: shown at once
        )
        now = time.monotonic()
        period = LIVE_PERIOD_JOB_S if self.sampler.busy else LIVE_PERIOD_S
        if static_key == self._static_key and now - self._live_at < period:
            return
        self._static_key, self._live_at = static_key, now
        self._status(status, header(inv))
        options.display = True
        prompts = [self._prompt(g) for g in inv.gpus]
        if len(prompts) != len(self._prompts):
            options.clear_options()
            options.add_options(prompts)
            options.highlighted = next(
                (i for i, g in enumerate(inv.gpus) if g.nvml_index == self.highlighted_nvml), 0
            )
        else:
            for i, (old, new) in enumerate(zip(self._prompts, prompts, strict=True)):
                if old != new:
                    options.replace_option_prompt_at_index(i, new)
        self._prompts = prompts
        g = inv.gpu(self.highlighted_nvml) or inv.gpus[0]
        snap = self.frame.snapshot(g.nvml_index) if self.frame else None
        links = inv.topology.gpu(g.nvml_index)
        self._set("gpu-details", (g, links), lambda: details_table(g, links_rows(links)))
        self._set("gpu-live", snap and snap_key(snap), lambda: live_table(snap))
        self._draw_glance(g, snap)
        self._set(
            "gpu-links",
            (id(inv), g.nvml_index, self.measured),
            lambda: links_view(inv.topology, g.nvml_index, self.measured),
        )
        self._set("gpu-versions", (id(inv), self._worker_key()), lambda: versions_table(inv))

    def _draw_glance(self, g: GpuInventory, snap: GpuSnapshot | None) -> None:
        history = self.histories.setdefault(g.nvml_index, History())
        if snap is not None:
            history.add(snap, g.power_limit_w)
        width = max(30, self.size.width or 38)
        tall = self.app.size.height >= 30  # a tall screen: sparklines (MainScreen's -tall)
        inv = self.inventory
        nvlink = reference(inv.topology.gpu(g.nvml_index) if inv else None, self.measured)
        key = (snap and snap_key(snap), width, tall, len(history.points["util"]), nvlink)
        self._set(
            "gpu-glance",
            key,
            lambda: glance(
                snap, g.power_limit_w, history, width, tall, nvlink, pcie_max=g.pcie_bandwidth
            ),
        )
        pid = (self.worker or {}).get("pid")
        self._set("gpu-procs", (key, pid), lambda: processes(snap, pid, width))

    def on_resize(self) -> None:
        """Redraw the bars and sparklines for the new width."""
        self._static_key = None  # the glance's bars and sparklines follow the pane's width
        self._redraw()

    def action_maximize(self) -> None:
        """Give the pane the whole screen (every figure and the links between the GPUs without
        scrolling), or give it back."""
        screen = self.screen
        if screen.maximized is self:
            screen.minimize()
        else:
            screen.maximize(self, container=False)

    def action_facts(self) -> None:
        """`i`: the fixed facts (name, UUID, SMs, clocks' maxima, versions) instead of the live
        figures, and back."""
        self.toggle_class("-facts")

    @property
    def details_renderable(self) -> Group:
        """Everything below the GPU list, as shown (tests render it to text)."""
        keys = ("gpu-glance", "gpu-links", "gpu-procs", "gpu-details", "gpu-live", "gpu-versions")
        return Group(*(self._shown.get(k, "") for k in keys))

    def _status(self, status: Static, text: Text) -> None:
        if text.plain != self._status_text:
            self._status_text = text.plain
            status.update(text)

    def _set(self, widget_id: str, key: Any, build: Any) -> None:
        """Update one Static only when what it shows has changed."""
        if widget_id in self._keys and self._keys[widget_id] == key:
            return
        self._keys[widget_id] = key
        self._shown[widget_id] = build()
        self.query_one(f"#{widget_id}", Static).update(self._shown[widget_id])

    def _worker_key(self) -> Any:
        inv = (self.worker or {}).get("inventory") or {}
        return (str(inv.get("versions")), str(inv.get("backends")))

    def _prompt(self, g: GpuInventory) -> str:
        snap = self.frame.snapshot(g.nvml_index) if self.frame else None
        return gpu_prompt(g, snap, g.nvml_index == self.selected_nvml)
