"""The History tab: this session's runs and the ones kept from earlier sessions, on any GPU.

Each run is one option of the `#history` list (oldest first): `run-N` for this session's run N,
`kept-ID` for a run kept in the store by an earlier session, the CLI or an import. Space marks a
run for comparison; with two marked, the detail below shows them side by side (same experiment:
rows aligned by contender, size and dtype, with ratios). Enter reopens a run in the panel.
"""

from __future__ import annotations

import contextlib
from datetime import datetime
from typing import Any

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.message import Message
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option, OptionDoesNotExist

from gpulab.app.runs import RunState, row_key
from gpulab.core import events as ev
from gpulab.history.entries import RunWatch, compare, entry, render_compare, save, worth_keeping
from gpulab.store.connection import StoreError
from gpulab.store.database import Store

MARKS = {ev.RESULT: "✓", ev.FAILED: "✗", ev.CANCELLED: "■"}
KEPT_LIMIT = 500
HINT = "space: mark two runs to compare · enter: open in the panel"


class HistoryList(OptionList):
    """The kept runs, newest first; space marks one, c compares the two marked."""

    BINDINGS = [
        Binding("space", "mark", "Mark to compare"),
        Binding("c", "compare", "Compare marked", show=False),
    ]

    def action_mark(self) -> None:
        """Mark or unmark the highlighted run for comparison."""
        if self.highlighted is not None:
            history = next(a for a in self.ancestors if isinstance(a, RunHistory))
            history.toggle_mark(str(self.get_option_at_index(self.highlighted).id))

    def action_compare(self) -> None:
        """Compare the two marked runs."""
        next(a for a in self.ancestors if isinstance(a, RunHistory)).show_compare()


class RunHistory(Vertical):
    """Owns the store connection the panel keeps its runs with (opened on first use)."""

    class KeptRead(Message):
        """The kept runs, read by the loading thread with its own connection to the store (or
        why there is none: `store` None and `why` set)."""

        def __init__(self, store: Any, kept: list[dict[str, Any]], why: str = "") -> None:
            self.store = store
            self.kept = kept
            self.why = why
            super().__init__()

    def __init__(self, store: Any = None, **kw: Any) -> None:
        super().__init__(**kw)
        self._store = store
        self._owns_store = False
        self._store_error = ""
        self.entries: dict[str, dict[str, Any]] = {}  # option id -> entry
        self._watches: dict[int, tuple[Any, Any, int, Any]] = {}  # run number -> its watch
        self.marked: list[str] = []
        self.loaded = False  # the kept runs of earlier sessions are listed

    def compose(self) -> ComposeResult:
        """The run list and the detail of the highlighted run (or the comparison)."""
        yield HistoryList(id="history")
        with VerticalScroll(id="history-detail-box"):
            yield Static(HINT, id="history-detail", markup=False)

    # ---- the store ------------------------------------------------------------------------
    @property
    def store(self) -> Any:
        """The store the runs are kept in, opened on first use (None when it cannot open)."""
        if self._store is None and not self._store_error:
            try:
                self._store = Store()
                self._owns_store = True
            except StoreError as exc:
                self._no_store(str(exc))
        return self._store

    def _no_store(self, why: str) -> None:
        if self._store_error:
            return
        self._store_error = why
        self.app.notify(
            f"{why}. Runs are shown for this session only.",
            title="Run history not kept",
            severity="warning",
            timeout=10,
        )

    def on_mount(self) -> None:
        """Load the kept runs in a thread, off the event loop."""
        # Off the event loop: opening the file and reading up to KEPT_LIMIT runs must not
        # delay the lab's first frame.
        self._load_kept()

    @work(thread=True, name="run history", exit_on_error=False)
    def _load_kept(self) -> None:
        """Read the kept runs in a thread worker; they come back as a KeptRead message."""
        self.post_message(self._read_kept())

    def _read_kept(self) -> KeptRead:
        """The kept runs, read with a connection of this thread's own."""
        try:
            store = Store()
        except StoreError as exc:
            return self.KeptRead(None, [], str(exc))
        try:
            kept = store.run_entries(limit=KEPT_LIMIT)
        except Exception as exc:  # noqa: BLE001 - an unreadable history is shown, not raised
            return self.KeptRead(store, [], f"unreadable: {exc}")
        return self.KeptRead(store, kept)

    @on(KeptRead)
    def _kept_read(self, message: KeptRead) -> None:
        if message.store is None:
            self._no_store(message.why)
            return
        if message.why:
            self.app.notify(message.why, title="Run history unreadable", severity="warning")
        self._show_kept(message.store, message.kept)

    def _show_kept(self, store: Any, kept: list[dict[str, Any]]) -> None:
        """Kept runs first (oldest first), then this session's runs that finished meanwhile."""
        if self._store is None:
            self._store, self._owns_store = store, True
        elif store is not self._store:
            store.close()
        session = self.entries
        kept_ids = {e.get("id") for e in session.values()}
        self.entries = {f"kept-{e['id']}": e for e in kept if e["id"] not in kept_ids}
        self.entries.update(session)
        options = self.query_one(HistoryList)
        options.clear_options()
        options.add_options([Option(self._prompt(oid), id=oid) for oid in self.entries])
        self.loaded = True

    def on_unmount(self) -> None:
        """Close the store if this widget opened it."""
        if self._owns_store and self._store is not None:
            self._store.close()

    def follow(
        self, state: RunState, device: int, inventory: dict[str, Any] | None, sampler: Any
    ) -> None:
        """Take telemetry frames from `sampler` (None: none) while `state` runs on CUDA
        `device`, for its clock and temperature; `inventory`: the worker's."""
        watch = RunWatch(inventory, int(device or 0))
        stop = None
        if sampler is not None:
            with contextlib.suppress(Exception):  # no telemetry is a reason in the entry
                stop = sampler.subscribe(watch.add)
        self._watches[state.number] = (watch, stop, int(device or 0), inventory)

    def record(self, state: RunState) -> None:
        """The finished run's entry: listed here, then kept in the store."""
        watch, stop, device, inventory = self._watches.pop(state.number, (None, None, 0, None))
        if stop is not None:
            stop()
        why = "" if stop is not None else "no telemetry sampler in this session"
        try:
            kept = entry(
                state.experiment,
                state.params,
                state.final,
                source="tui",
                inventory=inventory,
                device_index=device,
                telemetry=watch.summary(why) if watch is not None else None,
                started=state.started,
                ended=state.ended,
            )
        except Exception as exc:  # noqa: BLE001 - the run is on screen; only keeping it failed
            self.app.notify(str(exc), title="Run not kept in the history", severity="warning")
            return
        self.keep(state, kept)
        state.kept_id = kept.get("id")

    def keep(self, state: RunState, kept_entry: dict[str, Any]) -> None:
        """List a finished run of this session, then keep it (a failure costs one notice)."""
        oid = f"run-{state.number}"
        self.entries[oid] = kept_entry
        self.query_one(HistoryList).add_option(Option(self._prompt(oid), id=oid))

        store = self.store if worth_keeping(kept_entry) else None
        if store is None:
            return

        try:
            kept_entry["id"] = save(kept_entry, store)
        except Exception as exc:  # noqa: BLE001 - the run stays on screen either way
            self.app.notify(f"{exc}", title="Run not kept in the history", severity="warning")
            return
        self._reprompt(oid)

    # ---- showing -------------------------------------------------------------------------
    def _prompt(self, oid: str) -> str:
        e = self.entries[oid]
        mark = MARKS.get(str(e.get("status")), "?")
        chosen = "◆ " if oid in self.marked else ""
        when = _local(e.get("started_at"))
        where = e.get("device") or "?"
        if e.get("source") == "import" or oid.startswith("kept-"):
            where += f" @ {e.get('host') or '?'}"
        kept = f"#{e['id']} " if e.get("id") else ""
        answer = f" · {e['headline']}" if e.get("headline") else ""
        return f"{chosen}{mark} {kept}{when} {e['experiment']} on {where}{answer}"

    def _reprompt(self, oid: str) -> None:
        options = self.query_one(HistoryList)
        with contextlib.suppress(OptionDoesNotExist):  # gone: nothing to redraw
            options.replace_option_prompt(oid, self._prompt(oid))

    def toggle_mark(self, oid: str) -> None:
        """Mark or unmark run `oid` (a third mark drops the oldest); two marks show the comparison."""
        if oid in self.marked:
            self.marked.remove(oid)
        else:
            self.marked.append(oid)
            if len(self.marked) > 2:
                dropped = self.marked.pop(0)
                self._reprompt(dropped)
        self._reprompt(oid)
        if len(self.marked) == 2:
            self.show_compare()
        else:
            self.detail(f"marked {len(self.marked)} of 2 · {HINT}")

    def show_compare(self) -> None:
        """Show the two marked runs side by side, or say to mark two."""
        if len(self.marked) != 2:
            self.detail(f"mark two runs first · {HINT}")
            return
        a, b = (self.entries[oid] for oid in self.marked)
        self.detail(render_compare(compare(a, b)))

    def detail(self, text: str) -> None:
        """Put `text` in the detail box."""
        self.query_one("#history-detail", Static).update(text)

    def on_option_list_option_highlighted(self, event: OptionList.OptionHighlighted) -> None:
        """Describe the highlighted run, unless a comparison is shown."""
        if len(self.marked) == 2:
            return  # the comparison stays until a mark changes
        e = self.entries.get(str(event.option.id))
        if e is not None:
            self.detail(_describe(e))


def _local(iso: Any) -> str:
    try:
        return datetime.fromisoformat(str(iso)).astimezone().strftime("%m-%d %H:%M")
    except ValueError:
        return "?"


def _describe(e: dict[str, Any]) -> str:
    tele = e.get("telemetry") or {}
    clock, temp = tele.get("sm_clock_mhz"), tele.get("temperature_c")
    during = (
        f"SM clock {clock['mean']:.0f} MHz, {temp['max']:.0f} °C at most"
        if clock and temp
        else "no GPU telemetry: " + "; ".join(sorted(set((tele.get("reasons") or {}).values())))
    )
    params = ", ".join(f"{k}={v}" for k, v in (e.get("params") or {}).items())
    lines = [
        e.get("headline") or f"{e['experiment']}: {e.get('status')}",
        f"{e.get('device')} · {e.get('host')} · {e.get('source')} · {params}",
        f"during the run: {during}",
        HINT,
    ]
    return "\n".join(lines)


def state_from_entry(e: dict[str, Any]) -> RunState:
    """A kept run as the panel draws runs: its rows, verdicts, answer and explanation."""
    status = str(e.get("status") or ev.FAILED)
    state = RunState(0, str(e["experiment"]), dict(e.get("params") or {}), status=status)
    state.kept_id = e.get("id")
    for row in e.get("rows") or []:
        state.rows[row_key(row)] = row
    state.result = {
        "record": {
            "experiment": e["experiment"],
            "params": state.params,
            "device": e.get("device"),
        },
        "measurements": list(e.get("rows") or []),
        "verdicts": list(e.get("verdicts") or []),
        "series": list(e.get("series") or []),
        "artifacts": list(e.get("artifacts") or []),
        "summary": e.get("summary") or {},
        "unavailable": e.get("unavailable") or {},
        "explanation": e.get("explanation") or "",
        "lesson": e.get("lesson") or "",
        "headline": e.get("headline") or "",
    }
    if status != ev.RESULT:
        state.result = None
    failure = e.get("failure") or {}
    state.final = {"type": status, "kind": failure.get("kind", ""), **failure}
    state.fraction = 1.0
    for name, attr in (("started_at", "started"), ("finished_at", "ended")):
        with contextlib.suppress(ValueError):
            setattr(state, attr, datetime.fromisoformat(str(e.get(name))).timestamp())
    return state
