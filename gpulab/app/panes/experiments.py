"""The experiment panel: pick, set parameters, run through the runner, watch, read results.

This module holds the layout, the form and a run's life (submit, follow its events, finish,
cancel) and the history; `experiment_display.py` draws the run on screen. The lab's state (the
runner, the chosen device, the worker's inventory, status and log lines) arrives as attributes
the main screen sets; what happened goes up as Messages (`gpulab.app.messages`).
"""

from __future__ import annotations

import time
from typing import Any

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.reactive import var
from textual.widget import Widget
from textual.widgets import (
    Button,
    DataTable,
    Input,
    Label,
    Log,
    OptionList,
    ProgressBar,
    Select,
    Static,
    TabbedContent,
    TabPane,
)

from gpulab.app import messages
from gpulab.app.panes.experiment_display import COLUMNS, RunDisplay
from gpulab.app.runs import RunState
from gpulab.app.widgets.history import RunHistory, state_from_entry
from gpulab.app.widgets.images import ImageView
from gpulab.app.widgets.param_form import ParamForm, PickSelect
from gpulab.app.widgets.plots import ResultPlots
from gpulab.app.widgets.race import RaceView
from gpulab.core import events as ev
from gpulab.core.devices import Inventory
from gpulab.core.errors import BadInput
from gpulab.core.params import ParamError
from gpulab.experiments.registry import UnknownExperiment, all_experiments, get
from gpulab.history.predictions import EXPERIMENT, Predictions, experiment_figure, parse

FLUSH_S = 0.1  # redraw at most 10x a second however fast events arrive
PREDICT_NOTE = "optional: the fastest row's time (2ms), % of ceiling (40%) or winner's id"


class ExperimentPanel(VerticalScroll, can_focus=False):
    """Owns the runs of this session; the screen gives it the runner and the chosen device.

    How a run is drawn (progress, tabs, error box, headline) is its `RunDisplay`'s (`drawing`).
    """

    BINDINGS = [
        Binding("down", "field(1)", "Next field", show=False),
        Binding("up", "field(-1)", "Previous field", show=False),
    ]

    inventory: var[dict[str, Any] | None] = var(None)
    """What the worker can run here: which contenders are unavailable."""
    runner: var[Any] = var(None)
    """The runner client a run is submitted to."""
    device: var[int | None] = var(None)
    """The CUDA device a person chose; None: the worker's default."""
    device_index: var[int] = var(0)
    """The worker's default CUDA device (a run's telemetry follows it when none is chosen)."""
    worker_status: var[str] = var("worker: starting…")
    """The worker's state, shown beside the run button."""
    worker_line: var[str] = var("", always_update=True)
    """The worker's latest own log line: a live run's log shows it."""
    store: var[Any] = var(None)
    """The progress store, where a prediction is kept beside its measurement."""

    def __init__(self, *, sampler: Any = None, **kw: Any) -> None:
        """`sampler`: the telemetry sampler a run's history entry reads clocks from (None: no
        telemetry in the entry)."""
        super().__init__(**kw)
        self.sampler = sampler
        self.experiments = all_experiments()
        self.experiment_id = next(iter(self.experiments), "")
        self.runs: list[RunState] = []
        self.live: RunState | None = None
        self.job: Any = None
        self.drawing = RunDisplay(self)
        self._flusher: Any = None
        self._form_serial = 0
        self._form: ParamForm | None = None

    # ---- drawing (the RunDisplay's) ----------------------------------------------------------
    _cells = staticmethod(RunDisplay._cells)  # a results row's cells, as the table shows them

    @property
    def shown(self) -> RunState | None:
        """The run on screen."""
        return self.drawing.shown

    def show_run(self, state: RunState | None) -> None:
        """Draw `state`'s rows, plots, log and verdicts (None: an empty result)."""
        self.drawing.experiment_id = self.experiment_id
        self.drawing.show_run(state)

    def flush(self) -> None:
        """Apply everything that arrived since the last flush in one redraw."""
        self.drawing.experiment_id = self.experiment_id
        self.drawing.flush()

    def show_error(self, kind: str, message: str, has_traceback: bool = False) -> None:
        """Show a failed run's kind and message in the error box."""
        self.drawing.show_error(kind, message, has_traceback)

    def show_headline(self, text: str) -> None:
        """Show the run's one-line answer above the results."""
        self.drawing.show_headline(text)

    def action_maximize_results(self) -> None:
        """`m`: the tabs (race, results, explain with its plots and images) fill the screen;
        escape, or `m` again, restores the layout."""
        screen = self.screen
        if screen.maximized is not None:
            screen.minimize()
            return
        tabs = self.query_one("#exp-tabs", TabbedContent)
        screen.maximize(tabs, container=False)
        target = {"tab-explain": "#explain-scroll", "tab-results": "#results"}.get(
            tabs.active or ""
        )
        if target:
            self.query_one(target).focus()

    # ---- layout -------------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        """The experiment picker, its parameter form, the run buttons and the result tabs."""
        with Horizontal(id="exp-choose"):
            yield Label("Experiment", classes="param-name")
            yield PickSelect(
                [(e.title, e.id) for e in self.experiments.values()],
                value=self.experiment_id,
                allow_blank=False,
                compact=True,
                id="experiment-select",
            )
        yield Static("", id="exp-summary", markup=False)
        yield Vertical(id="form-holder")
        with Horizontal(id="exp-predict-row", classes="param-field"):
            yield Label("predict", classes="param-name")
            yield Input(placeholder="optional", compact=True, id="exp-predict")
            yield Static(PREDICT_NOTE, classes="param-note", markup=False)
        with Horizontal(id="exp-actions"):
            yield Button("▶ Run", id="run", variant="success", compact=True)
            yield Button("■ Cancel", id="cancel", variant="error", compact=True, disabled=True)
            yield Static("worker: starting…", id="worker-status", markup=False)
        with Horizontal(id="exp-progress"):
            yield ProgressBar(total=100, show_eta=False, id="progress")
            yield Static("", id="step", markup=False)
        with Horizontal(id="run-error-box"):
            yield Static("", id="run-error", markup=False)
            yield Button("Traceback", id="show-traceback", compact=True)
        yield Static("", id="headline", markup=False)  # the run's one-line answer
        yield Static("", id="exp-prediction", markup=False)  # the prediction beside it
        with TabbedContent(id="exp-tabs"):
            with TabPane("Race", id="tab-race"):
                yield RaceView(id="race")
            with TabPane("Results", id="tab-results"):
                yield DataTable(id="results", zebra_stripes=True, cursor_type="row")
                yield Static("", id="unavailable", markup=False)
            # the Explain tab scrolls on its own (wheel, PageDown, End); `m` maximizes it
            with TabPane("Explain", id="tab-explain"), VerticalScroll(id="explain-scroll"):
                # the pictures first: they are what a learner came to see; the words follow
                yield ResultPlots(id="plot")
                yield ImageView(id="images")
                yield Static(
                    "Run an experiment to see what it shows.", id="explanation", markup=False
                )
                yield Button("Open the lesson", id="open-lesson", compact=True)
            with TabPane("Log", id="tab-log"):
                yield Log(id="job-log", max_lines=2000)
            with TabPane("History", id="tab-history"):
                yield RunHistory(id="run-history")

    def on_mount(self) -> None:
        """Set up the results table and load the first experiment."""
        table = self.query_one("#results", DataTable)
        for name in COLUMNS:
            table.add_column(name, key=name)
        self.query_one("#run-error-box").display = False
        self.query_one("#open-lesson").display = False
        self.set_worker_status(self.worker_status)
        self.show_headline("")
        self._build_form(self.experiment_id, {})

    # ---- choosing and loading -----------------------------------------------------------
    @property
    def form(self) -> ParamForm:
        """The parameter form of the loaded experiment."""
        assert self._form is not None
        return self._form

    def _build_form(self, experiment_id: str, values: dict[str, Any]) -> None:
        exp = get(experiment_id)
        self.experiment_id = experiment_id
        frame = (
            self.parent
            if isinstance(self.parent, Widget) and self.parent.has_class("pane")
            else self
        )
        frame.border_title = f"Experiment: {exp.title}"
        if self.shown is not None and self.shown.experiment != experiment_id and not self.running:
            self.show_run(None)  # another experiment's results must not stay on screen (History)
        elif self.shown is None:
            self.show_headline("")
        self.query_one("#exp-summary", Static).update(exp.summary)
        holder = self.query_one("#form-holder")
        if self._form is not None:
            # Only the last form: an earlier one may still be on its way out, and removing
            # it again (remove_children sees it until it is gone) would prune it twice.
            self._form.remove()
        self._form_serial += 1  # a fresh id: the old form keeps its id until it has gone
        self._form = ParamForm(exp.params, values, id=f"param-form-{self._form_serial}")
        holder.mount(self._form)
        self._show_contenders()

    def load(self, experiment_id: str, params: dict[str, Any] | None = None) -> None:
        """Open `experiment_id` with `params` filled in (a lesson link, the palette, history)."""
        get(experiment_id)  # raises UnknownExperiment before anything changes
        select = self.query_one("#experiment-select", Select)
        with select.prevent(Select.Changed):
            select.value = experiment_id
        self._build_form(experiment_id, dict(params or {}))

    @on(Select.Changed, "#experiment-select")
    def _experiment_chosen(self, event: Select.Changed) -> None:
        event.stop()
        if isinstance(event.value, str) and event.value != self.experiment_id:
            self._build_form(event.value, {})

    def set_inventory(self, inventory: dict[str, Any]) -> None:
        """Take the worker's inventory and show which contenders can run."""
        self.inventory = inventory

    def watch_inventory(self) -> None:
        if self.is_mounted:
            self._show_contenders()

    def watch_worker_status(self, text: str) -> None:
        if self.is_mounted:
            self.set_worker_status(text)

    def watch_worker_line(self, line: str) -> None:
        live = self.live
        if line and live is not None and not live.finished:
            live.add_log(line)

    def _show_contenders(self) -> None:
        exp = get(self.experiment_id)
        why: dict[str, str] = {}
        if self.inventory is not None:
            why = exp.availability(Inventory.from_dict(self.inventory))
        races = self.query(RaceView)
        if not races:  # the tabs compose after us: try again once they have
            self.call_after_refresh(self._show_contenders)
            return
        race = races.first()
        race.set_contenders([(c.id, c.label, why.get(c.id, "")) for c in exp.contenders])
        lines = [f"{c.label}: {why[c.id]}" for c in exp.contenders if why.get(c.id)]
        self.query_one("#unavailable", Static).update(
            ("Unavailable here:\n  " + "\n  ".join(lines)) if lines else ""
        )
        if self.shown and self.shown.experiment != self.experiment_id:
            race.show(None)

    def set_worker_status(self, text: str) -> None:
        """Show the worker's state (starting, ready, restarting) above the form."""
        self.query_one("#worker-status", Static).update(text)

    def focus_target(self) -> Widget | None:
        """Where the keyboard lands when this pane is entered: the experiment chooser."""
        found = self.query("#experiment-select")
        return found.first() if found else None

    # ---- navigation inside the panel ----------------------------------------------------
    def action_field(self, step: int) -> None:
        """Move focus `step` fields forward or back within the panel."""
        chain = [w for w in self.screen.focus_chain if self in w.ancestors]
        if not chain:
            return
        focused = self.screen.focused
        i = chain.index(focused) if focused in chain else -1
        chain[(i + step) % len(chain)].focus()

    # ---- running ------------------------------------------------------------------------
    @property
    def running(self) -> bool:
        """Whether a run is in progress."""
        return self.live is not None and not self.live.finished

    @on(Button.Pressed, "#run")
    async def _run_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        await self.start_run()

    @on(Input.Submitted)
    async def _field_submitted(self, event: Input.Submitted) -> None:
        """Enter in a parameter field runs, like the Run button."""
        event.stop()
        await self.start_run()

    @on(Button.Pressed, "#cancel")
    async def _cancel_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        await self.cancel_run()

    async def start_run(self) -> RunState | None:
        """Validate the form and submit; every refusal is shown beside the form, never raised."""
        if self.running:
            self.app.notify("A run is in progress: cancel it first (escape).", severity="warning")
            return None
        runner = self.runner
        errors = self.form.errors()
        if errors:
            self.show_error(ev.KIND_BAD_PARAMS, errors[0])
            return None
        if runner is None:
            self.show_error(ev.KIND_WORKER_START, "the runner is not available")
            return None
        raw = self.form.raw()
        exp = get(self.experiment_id)
        predict = self.query_one("#exp-predict", Input)
        try:
            params = exp.params.validate(raw)
            guess = parse(predict.value, [c.id for c in exp.contenders])
        except BadInput as exc:  # a parameter or the prediction: one line beside the form
            self.show_error(ev.KIND_BAD_PARAMS, str(exc))
            return None
        state = RunState(len(self.runs) + 1, self.experiment_id, params, started=time.time())
        if guess is not None:  # kept before the run: a prediction is made before it is seen
            state.prediction = self._predictions().predict(EXPERIMENT, exp.id, guess)
            predict.value = ""  # the next run asks for a prediction of its own
        self.runs.append(state)
        self.live = state
        device = self.device if self.device is not None else self.device_index
        inventory = self.inventory
        # telemetry during the run, for the history
        self.query_one(RunHistory).follow(state, device, inventory, self.sampler)
        self.show_run(state)
        self._set_running(True)
        try:
            job = await runner.submit(self.experiment_id, raw, device=self.device)
        except (ParamError, UnknownExperiment) as exc:
            self._fail_locally(state, ev.KIND_BAD_PARAMS, str(exc))
            return state
        except Exception as exc:  # noqa: BLE001 - a dead worker must not take the app down
            self._fail_locally(state, ev.KIND_WORKER_START, f"{type(exc).__name__}: {exc}")
            return state
        state.job_id = str(job.id)
        self.job = job
        self.post_message(messages.JobStarted())
        self.run_worker(self._follow(job, state), group="job", exit_on_error=False)
        return state

    def _fail_locally(self, state: RunState, kind: str, message: str) -> None:
        state.apply(ev.make(ev.FAILED, state.job_id, kind=kind, message=message, traceback=""))
        self._finish(state)

    async def _follow(self, job: Any, state: RunState) -> None:
        try:
            async for event in job:
                if event.get("type") == ev.MEMORY:
                    continue  # the app sends memory readings to the gauge as they arrive
                state.apply(event)
                self.drawing.dirty = True
                if state.finished:
                    break
        finally:
            if not state.finished:
                state.apply(
                    ev.make(
                        ev.FAILED,
                        state.job_id,
                        kind=ev.KIND_CRASHED,
                        message="the job's event stream ended without a result",
                        traceback="",
                    )
                )
            self._finish(state)

    def _predictions(self) -> Predictions:
        if self.store is None:  # a panel on its own (a test's app): a connection of its own
            # deferred: the store opens when a prediction is first made
            from gpulab.app.store_access import open_store

            self.store = open_store(self.app)
        return Predictions(self.store)

    def _settle_prediction(self, state: RunState) -> None:
        """Measure the run's prediction by its result, keep it, and read the calibration."""
        pending = state.prediction
        if pending is None or state.calibration:  # none made, or settled already
            return
        result = state.result if state.status == ev.RESULT else None
        if result:
            value, note = experiment_figure(pending.quantity, result)
            device = str((result.get("record") or {}).get("device", ""))
        else:
            value, note, device = None, f"the run ended {state.status}", ""
        kept = self._predictions()
        state.prediction = kept.measure(pending, value, device=device, note=note)
        state.calibration = kept.calibration().words()

    def _finish(self, state: RunState) -> None:
        state.ended = state.ended or time.time()
        self._settle_prediction(state)
        if state is self.live:
            self._set_running(False)
            self.job = None
        self.post_message(messages.JobEnded(state.final))  # a worker killed by a cancel goes
        self.drawing.dirty = True
        self.flush()
        self.query_one(RunHistory).record(state)  # shown first (flush above), kept after
        final = state.final or {}
        if state.status == ev.FAILED:
            self.app.notify(
                str(final.get("message", "")),
                title=f"Run failed: {final.get('kind', 'error')}",
                severity="error",
                timeout=8,
            )
        elif state.status == ev.CANCELLED:
            self.app.notify(f"{state.experiment} cancelled", severity="warning")
        else:
            self.app.notify(f"{state.experiment} finished", title="Result")
            self._focus_results()
        self.post_message(messages.RunFinished(state))

    def _focus_results(self) -> None:
        """After a run the keyboard moves to the result tabs (left/right picks one), unless
        the learner is typing elsewhere."""
        focused = self.screen.focused
        if focused is not None and (self not in focused.ancestors or isinstance(focused, Input)):
            return
        from textual.widgets import Tabs

        tabs = self.query_one("#exp-tabs").query_one(Tabs)
        # Scrolled into view once the finished run's lines are laid out: focus's own scroll
        # reads the layout before that and, on a busy machine, centred the tabs on a stale one
        tabs.focus(scroll_visible=False)
        self.call_after_refresh(tabs.scroll_visible, animate=False)

    async def cancel_run(self) -> bool:
        """Ask the runner to cancel the run; False when none runs."""
        if not self.running or self.job is None:
            return False
        runner = self.runner
        self.query_one("#step", Static).update("cancelling…")
        self.query_one("#cancel", Button).disabled = True
        if runner is not None:
            try:
                await runner.cancel(self.job)
            except Exception as exc:  # noqa: BLE001 - a failed cancel is a notice, not a crash of the UI
                self.app.notify(f"cancel failed: {exc}", severity="error")
        return True

    def _set_running(self, running: bool) -> None:
        self.query_one("#run", Button).disabled = running
        self.query_one("#cancel", Button).disabled = not running
        if running and self._flusher is None:
            self._flusher = self.set_interval(FLUSH_S, self.flush)
        elif not running and self._flusher is not None:
            self._flusher.stop()
            self._flusher = None

    # ---- the buttons under a run ---------------------------------------------------------
    @on(Button.Pressed, "#show-traceback")
    def _traceback(self, event: Button.Pressed) -> None:
        event.stop()
        # deferred: a screen loads when it first opens
        from gpulab.app.screens.traceback import TracebackScreen

        final = (self.shown.final if self.shown else None) or {}
        self.app.push_screen(TracebackScreen(final))

    @on(Button.Pressed, "#open-lesson")
    def _open_lesson(self, event: Button.Pressed) -> None:
        event.stop()
        lesson = ((self.shown.result if self.shown else None) or {}).get("lesson", "")
        if lesson:
            self.post_message(messages.OpenLesson(lesson))

    # ---- history ------------------------------------------------------------------------
    @on(OptionList.OptionSelected, "#history")
    def _reopen(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        oid = str(event.option.id)
        if oid.startswith("run-"):
            self.reopen(self.runs[int(oid.removeprefix("run-")) - 1])
            return
        kept = self.query_one(RunHistory).entries.get(oid)
        if kept is not None:
            try:
                self.reopen(state_from_entry(kept))
            except Exception as exc:  # noqa: BLE001 - e.g. an experiment this gpulab lacks
                self.app.notify(str(exc), title="Cannot open this run", severity="warning")

    def reopen(self, state: RunState) -> None:
        """Show `state` (a run from the history) in the results tab, loading its experiment when
        idle."""
        if state.experiment != self.experiment_id or not self.running:
            self.load(state.experiment, state.params)
        self.show_run(state)
        self.query_one(TabbedContent).active = "tab-results"
