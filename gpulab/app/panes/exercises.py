"""The Exercises pane (#exercises): the track with state and best grade, and one exercise open.

Opening an exercise shows its statement and an editor on the learner's own file (the same file
`gpulab ex` uses, saved as the learner types: gpulab.app.widgets.code_editor). ctrl+r saves and
checks: the check is the hidden `exercise-check` job on the app's runner, the worker that runs
the experiments, so this process never imports torch or CuPy, the memory gauge goes on reading
the worker, and a kernel that hangs or crashes is cancelled or survived like an experiment (the
editor's text is on disk before the job starts). The verdict shows beside the code (below it
when the pane is narrow) and the attempt goes into the progress store.

Under the verdict of a graded kernel check, and on f4 (Explain), a compact card says why the
kernel runs at its speed (gpulab.explain.card, computed in a thread worker: it reads the file,
compiles with NVRTC and imports no GPU library; the card comes back as a Message). f4 on a card
already shown runs one Nsight Compute pass (a subprocess, from a thread worker) with its
progress in the card; escape cancels the worker, and with it the pass.

The lab's state (the store, the worker's inventory, the runner, the chosen device, what a job
waits for) arrives as attributes the main screen sets; what the pane has to say goes up as
Messages (`gpulab.app.messages`).
"""

from __future__ import annotations

import time
from typing import Any

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Container, Horizontal, Vertical, VerticalScroll
from textual.coordinate import Coordinate
from textual.events import Resize
from textual.message import Message
from textual.reactive import var
from textual.widget import Widget
from textual.widgets import DataTable, Input, Label, Markdown, Static
from textual.worker import get_current_worker

from gpulab.app import messages
from gpulab.app.store_access import open_store
from gpulab.app.widgets.code_editor import ExerciseEditor, python_language
from gpulab.app.widgets.explain_card import ExplainCard
from gpulab.app.widgets.verdict import VerdictView
from gpulab.core import events as ev
from gpulab.core.devices import Inventory
from gpulab.core.errors import BadInput, Cancelled
from gpulab.exercises import ladder
from gpulab.exercises.loader import Catalog, Exercise, load_catalog
from gpulab.exercises.progress import NOT_STARTED, PASSING, ExerciseProgress, Progress
from gpulab.exercises.workspace import Workspace, WorkspaceError
from gpulab.exercises.yardstick import key_for
from gpulab.exercises.yardstick import words as yardstick_words
from gpulab.history.predictions import (
    CHECK_CONTENDERS,
    EXERCISE,
    Prediction,
    Predictions,
    check_figure,
    parse,
)

NARROW_BELOW = 100  # columns: below this the verdict goes under the code
LINE_STYLE = {3: "bold red", 2: "yellow", 1: "cyan"}  # the worst line's sentence, by severity
TITLE_MAX = 44  # the list's title column, so state and grade fit in 80 columns
STATE_STYLE = {PASSING: "green", "failing": "red", NOT_STARTED: "dim"}
PREDICT_HINT = "optional: 2ms, 40%, you, library"
EMULATOR_PASSED = "emulator ✓"  # passed on the CUDA emulator: correctness only, no grade


def track_line(catalog: Catalog, progress: dict[str, ExerciseProgress], inventory: Any) -> str:
    """`2 of 13 passing · 1 gold · 5 need a GPU here`: where the learner stands."""
    passing = sum(1 for e in catalog if progress.get(e.id, ExerciseProgress(e.id)).passed_ever)
    gold = sum(1 for p in progress.values() if p.best_grade == "gold")
    filled = round(10 * passing / max(1, len(catalog)))
    parts = [f"Track {'█' * filled}{'░' * (10 - filled)} {passing} of {len(catalog)} passed"]
    parts.append(f"{gold} gold")
    if inventory is not None:
        blocked = sum(1 for e in catalog if e.unavailable(inventory))
        if blocked:
            parts.append(f"{blocked} need a GPU or CuPy here")
        emulated = sum(1 for e in catalog if e.emulated(inventory))
        if emulated:
            parts.append(f"{emulated} on the CUDA emulator")
    return " · ".join(parts)


def best_cell(p: ExerciseProgress, emulated: bool) -> Text:
    """The list's Best column: the grade; "emulator ✓" for a pass on the emulator only (no
    grade there); "emulator" where the exercise runs on it here and has not passed yet."""
    if p.best_grade:
        return Text(p.best_grade)
    if p.only_emulated:
        return Text(EMULATOR_PASSED, style="green")
    if p.passed_ever:
        return Text("passed")
    return Text("emulator" if emulated else "", style="dim")


class ExercisesPane(Widget):
    """The exercise track as a table, and one open exercise: statement, editor, hints, verdict."""

    BINDINGS = [
        Binding("ctrl+r,f5", "check", "Check", id="exercises.check"),
        Binding("ctrl+g", "hint", "Hint", id="exercises.hint"),
        Binding("f2", "toggle_side", "Statement", id="exercises.statement"),
        Binding("ctrl+o", "lesson", "Lesson", id="exercises.lesson"),
        Binding("f4", "explain", "Explain", id="exercises.explain"),
        Binding("f3", "predict", "Predict", id="exercises.predict"),
        Binding("f8", "reset", "Reset", id="exercises.reset"),
        Binding("f9", "solution", "Solution", id="exercises.solution"),
        Binding("escape", "back", "Back", id="exercises.back"),
    ]

    store: var[Any] = var(None)
    """The progress store (the app's; a bare app's pane opens its own)."""
    inventory: var[dict[str, Any] | None] = var(None)
    """What the worker can run here (its handshake's inventory)."""
    runner: var[Any] = var(None)
    """The runner client a check is submitted to."""
    device: var[int | None] = var(None)
    """The CUDA device a person chose; None: the worker's default."""
    waiting_for: var[str] = var("")
    """What a check submitted now waits for (the calibration, a preparation)."""

    class CardReady(Message):
        """The card's lines for exercise `exercise_id` (built from `text`, with explanation
        `explanation`), from the explain thread."""

        def __init__(self, exercise_id: str, text: str, explanation: Any, lines: list[str]):
            self.exercise_id = exercise_id
            self.text = text
            self.explanation = explanation
            self.lines = lines
            super().__init__()

    class ProfileProgress(Message):
        """A line of Nsight Compute's progress, from the profile thread."""

        def __init__(self, line: str) -> None:
            self.line = line
            super().__init__()

    class ProfileDone(Message):
        """The card after the Nsight Compute pass (or its end: cancelled, not possible)."""

        def __init__(self, lines: list[str]) -> None:
            self.lines = lines
            super().__init__()

    def __init__(
        self,
        *,
        catalog: Catalog | None = None,
        workspace: Workspace | None = None,
        store: Any = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self._catalog = catalog
        self.workspace = workspace or Workspace()
        if store is not None:
            self.set_reactive(ExercisesPane.store, store)
        self.machine: Inventory | None = None  # `inventory`, read
        self.current: Exercise | None = None
        self.checking = False
        self.checker: Any = None
        self.quick = False  # tests: small inputs, few timing runs
        self.pressed_at = 0.0
        self.last_latency: float | None = None  # key press to verdict on screen, seconds
        self.last_job_s = 0.0  # of which submitting to the job's final event
        self.explained: tuple[str, str] | None = None  # (exercise, file text) the card is about
        self.explanation: Any = None  # the card's gpulab.explain Explanation
        self.ladder_note = ""  # the last graded check's place on the exercise's ladder
        self.profiling = False

    # ---- building -------------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        """The track table, then the open exercise's statement, editor, hints and verdict."""
        with Vertical(id="ex-list-view"):
            yield Static(id="ex-track")
            table: DataTable[Any] = DataTable(id="ex-table", cursor_type="row", zebra_stripes=True)
            yield table
        with Vertical(id="ex-detail"):
            yield Static(id="ex-head")
            with Container(id="ex-body"):
                with Vertical(id="ex-code"):
                    yield ExerciseEditor.code_editor(
                        "", language=python_language(), id="ex-editor", compact=True
                    )
                    yield Static(id="ex-line")
                with VerticalScroll(id="ex-side"):
                    with Horizontal(id="ex-predict-row"):
                        yield Label("Predict ", id="ex-predict-label")
                        yield Input(placeholder=PREDICT_HINT, compact=True, id="ex-predict")
                    yield Static(id="ex-prediction", markup=False)
                    yield VerdictView(id="ex-verdict")
                    yield ExplainCard(id="ex-explain")
                    yield Static(id="ex-hints")
                    yield Markdown(id="ex-statement")

    @property
    def catalog(self) -> Catalog:
        """The exercise catalog, loaded on first use."""
        if self._catalog is None:
            self._catalog = load_catalog()
        return self._catalog

    @property
    def editor(self) -> ExerciseEditor:
        """The editor on the open exercise's file."""
        return self.query_one("#ex-editor", ExerciseEditor)

    @property
    def verdict(self) -> VerdictView:
        """The view of the last check's verdict."""
        return self.query_one("#ex-verdict", VerdictView)

    @property
    def card(self) -> ExplainCard:
        return self.query_one("#ex-explain", ExplainCard)

    def focus_target(self) -> Widget:
        """What takes focus when the pane does: the editor when an exercise is open, else the
        table."""
        return self.editor if self.current is not None else self.query_one("#ex-table")

    def on_mount(self) -> None:
        """Fill the table (with what runs here, when the worker has already said)."""
        if self.store is None:  # a pane on its own (a test's app): a connection of its own
            self.store = open_store(self.app)
        table = self.query_one("#ex-table", DataTable)
        table.add_columns("#", "Exercise", "State", "Best")
        self.refresh_list()

    def on_resize(self, event: Resize) -> None:
        """Stack the side (statement, hints, verdict) and the editor when the pane is narrow."""
        self.set_class(event.size.width < NARROW_BELOW, "-narrow")

    def set_inventory(self, inventory: dict[str, Any]) -> None:
        """Take the worker's inventory (which backends run here) and redraw the list."""
        self.inventory = inventory

    def watch_inventory(self, inventory: dict[str, Any] | None) -> None:
        self.machine = Inventory.from_dict(inventory) if inventory else None
        if self.is_mounted:
            self.refresh_list()

    # ---- the list -------------------------------------------------------------------------
    def progress(self) -> dict[str, ExerciseProgress]:
        """Every exercise's progress (state, best grade, hints shown) from the store."""
        return Progress(self.store).all()

    def refresh_list(self) -> None:
        """Redraw the table's rows from the catalog and progress, keeping the cursor."""
        table = self.query_one("#ex-table", DataTable)
        keep = table.cursor_row
        table.clear()
        progress = self.progress()
        for ex in self.catalog:
            p = progress.get(ex.id, ExerciseProgress(ex.id))
            why = ex.unavailable(self.machine) if self.machine is not None else ""
            if why:  # the whole reason shows when it is opened; here, what is missing
                why = "needs CuPy" if "cupy" in ex.needs else "needs a GPU"
            state = Text(why or p.state, style="dim" if why else STATE_STYLE.get(p.state, ""))
            emulated = self.machine is not None and ex.emulated(self.machine)
            best = best_cell(p, emulated)
            title = ex.title if len(ex.title) <= TITLE_MAX else ex.title[: TITLE_MAX - 1] + "…"
            table.add_row(str(ex.order), title, state, best, key=ex.id)
        if self.catalog.exercises:
            table.move_cursor(row=min(max(keep, 0), len(self.catalog) - 1))
        self.query_one("#ex-track", Static).update(
            Text(track_line(self.catalog, progress, self.machine) + " · enter opens one")
        )

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        """Open the exercise of the chosen row."""
        event.stop()
        if event.row_key.value:
            self.open_exercise(str(event.row_key.value))

    # ---- one exercise ---------------------------------------------------------------------
    def open_exercise(self, name: str) -> bool:
        """Show exercise `name` (an id, `NN-id` or order) with the learner's file in the editor."""
        try:
            ex = self.catalog.get(name)
            self.editor.attach(self.workspace, ex)
        except (KeyError, WorkspaceError, OSError) as exc:
            self.app.notify(str(exc), title="Cannot open the exercise", severity="error")
            return False
        self.current = ex
        self.explained, self.explanation = None, None
        self.ladder_note = ""
        self.card.clear()
        self._show_lines(None)
        self.query_one("#ex-prediction", Static).display = False  # another exercise's
        self.add_class("-open")
        self.remove_class("-side-max")
        self.query_one("#ex-statement", Markdown).update(ex.statement)
        self._show_head()
        self._show_hints()
        last = Progress(self.store).attempts(ex.id, limit=1)
        status = (
            f"Last check: {last[0].verdict} ({last[0].message})\n\nctrl+r checks your code."
            if last
            else "Not checked yet. Edit the code (it saves as you type), then ctrl+r checks it."
        )
        if self.machine is not None and ex.emulated(self.machine):
            status += (
                "\n\nNo GPU with CuPy here: your CUDA C runs on the CPU emulator, correctness "
                "only, no speed grade. It stops at the first out-of-bounds access or "
                "shared-memory race and says where, as compute-sanitizer does."
            )
        self.verdict.show_idle(
            f"{status}\n\nYour file: {self.workspace.path(ex)} (edit it here or in any "
            "editor: a change made outside shows up here)."
        )
        self.call_after_refresh(self.editor.focus)
        if not (self.machine is not None and ex.unavailable(self.machine)):
            self.post_message(messages.ExerciseOpened(ex.id))
        return True

    def _show_head(self) -> None:
        ex = self.current
        if ex is None:
            return
        p = Progress(self.store).get(ex.id)
        best = f" · best {p.best_grade}" if p.best_grade else ""
        if not best and p.only_emulated:
            best = " · passed on the emulator"
        why = ex.unavailable(self.machine) if self.machine is not None else ""
        where = ""
        if self.machine is not None and ex.emulated(self.machine):
            where = " · CUDA emulator: correctness only"
        line = Text(f"{ex.order}. {ex.title}", style="bold")
        line.append(f" · {why or p.state}{best}{where} · {ex.file_name}", style="dim")
        self.query_one("#ex-head", Static).update(line)

    def _show_hints(self) -> None:
        ex = self.current
        text = Text()
        if ex is not None:
            shown = Progress(self.store).get(ex.id).hints_revealed
            for i, hint in enumerate(ex.hints[:shown]):
                text.append(f"Hint {i + 1}/{len(ex.hints)}: ", style="bold")
                text.append(f"{hint}\n")
            if self.ladder_note:  # the next rung's idea: `gpulab ex ladder` draws the rest
                text.append("Ladder: ", style="bold")
                text.append(f"{self.ladder_note}\n", style="cyan")
        self.query_one("#ex-hints", Static).update(text)

    def close_exercise(self) -> None:
        """Back to the list: the editor lets go of the file."""
        self.editor.detach()
        self.current = None
        self.remove_class("-open")
        self.refresh_list()
        self.query_one("#ex-table", DataTable).focus()

    # ---- checking -------------------------------------------------------------------------
    async def action_check(self) -> None:
        """Save and check the open exercise in the worker (in the list: open the row's exercise)."""
        ex = self.current
        if ex is None:
            table = self.query_one("#ex-table", DataTable)
            if table.row_count:
                self.open_exercise(
                    str(table.coordinate_to_cell_key(Coordinate(table.cursor_row, 0))[0].value)
                )
            return
        if self.checking:
            self.app.notify("A check is running: escape cancels it.", severity="warning")
            return
        runner = self.runner
        if runner is None:
            self.app.notify(
                "The worker is not ready yet; try again in a moment.", severity="warning"
            )
            return
        predict = self.query_one("#ex-predict", Input)
        try:
            guess = parse(predict.value, CHECK_CONTENDERS)
        except BadInput as exc:
            self.app.notify(str(exc), title="Not a prediction", severity="warning", timeout=8)
            return
        if not self.editor.flush():
            return  # not saved: checking the old file would grade the wrong code
        self.pressed_at = time.perf_counter()
        line = self.query_one("#ex-prediction", Static)
        pending = None
        if guess is not None:  # kept before the check: a prediction is made before it is seen
            pending = Predictions(self.store).predict(EXERCISE, ex.id, guess)
            predict.value = ""  # the next check asks for a prediction of its own
            line.update(pending.said()[:1].upper() + pending.said()[1:] + "; measuring…")
        line.display = pending is not None
        self.checking = True
        ahead = self.waiting_for
        self.verdict.show_progress(
            0.0, f"waiting for {ahead}…" if ahead else "submitting to the worker…"
        )
        self.remove_class("-side-max")
        self.query_one("#ex-side", VerticalScroll).scroll_home(animate=False)
        self.run_worker(self._check(ex, runner, pending), group="ex-check", exit_on_error=False)

    @on(Input.Submitted, "#ex-predict")
    async def _predicted(self, event: Input.Submitted) -> None:
        """Enter in the prediction field checks, like ctrl+r."""
        event.stop()
        await self.action_check()

    def _settle(self, pending: Prediction, result: Any) -> str:
        """The prediction measured by the check's timing, kept; its line and the calibration's."""
        value, note = check_figure(pending.quantity, result.timing)
        if not result.passed and value is None:
            note = f"the check failed: {result.message}"
        kept = Predictions(self.store)
        done = kept.measure(pending, value, device=result.device, note=note)
        words = done.words()
        return f"{words[:1].upper()}{words[1:]}\n{kept.calibration().words()}"

    async def _check(self, ex: Exercise, runner: Any, pending: Prediction | None = None) -> None:
        # deferred: the grader (NumPy) loads with the first check
        from gpulab.ex.session import Checker, record
        from gpulab.exercises.outcome import FAIL, CheckResult, new_seed

        def on_event(event: dict[str, Any]) -> None:
            if event.get("type") == ev.PROGRESS and self.checking:
                fraction = float(event.get("fraction") or 0.0)
                self.verdict.show_progress(fraction, str(event.get("message", "")))

        self.checker = Checker(client=runner, on_event=on_event, quick=self.quick)
        self.checker.device = self.device
        path = self.workspace.path(ex)
        self.post_message(messages.JobStarted())
        try:
            result, self.last_job_s = await self.checker.check(ex, path, new_seed())
        except Exception as exc:  # noqa: BLE001 - a dead runner is a verdict, not a crash
            result = CheckResult(ex.id, FAIL, f"the worker could not run the check: {exc}", 0,
                                 str(path), kind="internal")  # fmt: skip
        finally:
            self.checking = False
        self.post_message(messages.JobEnded(self.checker.last_final))
        try:
            record(self.store, result)
        except Exception as exc:  # noqa: BLE001 - the verdict still shows
            self.app.notify(f"Could not save the attempt: {exc}", severity="warning")
        said = self._settle(pending, result) if pending is not None else ""
        if self.current is ex:
            self.verdict.show_result(result)
            self.query_one("#ex-prediction", Static).update(said)
            self.card.clear()
            self.explained, self.explanation = None, None
            self._show_head()
            self.call_after_refresh(self._verdict_painted)
            if result.passed and result.timing and ex.graded_by_speed:
                self._explain(ex, path, result, self._card_width())
                self.ladder_note = ladder.for_check(ex, result.timing, self._yardstick_key())
                self._show_hints()
        self.refresh_list()
        self.post_message(messages.ProgressChanged(ex.id))

    def _verdict_painted(self) -> None:
        self.last_latency = time.perf_counter() - self.pressed_at

    # ---- explain --------------------------------------------------------------------------
    def _card_width(self) -> int:
        side = self.query_one("#ex-side", VerticalScroll)
        # the scrollbar's room is kept even while none shows: the card itself may bring one
        return max(40, side.content_size.width - side.styles.scrollbar_size_vertical)

    @work(thread=True, group="ex-explain", exit_on_error=False)
    def _explain(self, ex: Exercise, path: Any, result: Any = None, width: int = 80) -> None:
        """Tier 0 in a thread worker; the card comes back as a CardReady message."""
        from gpulab.explain import card  # deferred: NVRTC and the explain package load on use

        text = path.read_text(encoding="utf-8") if path.is_file() else ""
        try:
            e = card.for_check(ex, path, result) if result is not None else card.for_file(ex, path)
        except Exception as exc:  # noqa: BLE001 - a card that cannot be made says why, in one line
            lines = ["Why this speed:", f"  could not explain it: {type(exc).__name__}: {exc}"]
            self.post_message(self.CardReady(ex.id, text, None, lines))
            return
        if e is None:
            lines = (
                [
                    "Why this speed:",
                    "  no RawKernel, RawModule or @triton.jit kernel in your file to explain",
                ]
                if result is None
                else []
            )
        else:
            lines = card.card_lines(e, width)
        self.post_message(self.CardReady(ex.id, text, e, lines))

    @on(CardReady)
    def _card_ready(self, message: CardReady) -> None:
        ex = self.current
        if ex is None or ex.id != message.exercise_id:
            return  # another exercise is open by now
        self.explained, self.explanation = (ex.id, message.text), message.explanation
        self.card.show_lines(message.lines)
        self._show_lines(message.explanation)

    def _show_lines(self, e: Any) -> None:
        """The gutter marks and the worst line's sentence of explanation `e` (None: none)."""
        marks = e.marks() if e is not None else {}
        worst = e.worst_line() if e is not None else None
        self.editor.marks = {line - 1: sev for line, sev in marks.items()}
        line = self.query_one("#ex-line", Static)
        line.update(
            Text(worst.sentence(), style=LINE_STYLE.get(worst.severity, "")) if worst else ""
        )
        line.set_class(worst is not None, "-shown")

    @on(ExerciseEditor.Changed, "#ex-editor")
    def _code_changed(self) -> None:
        """An edit: the marks and the sentence were worked out from the text before it."""
        stale = self.explained is not None and self.editor.text != self.explained[1]
        if stale and (self.editor.marks or self.query_one("#ex-line", Static).has_class("-shown")):
            self._show_lines(None)

    def action_explain(self) -> None:
        """f4: the static card; f4 again on the same code: one Nsight Compute pass."""
        ex = self.current
        if ex is None:
            return
        if self.profiling:
            self.app.notify("Nsight Compute is running: escape cancels it.", severity="warning")
            return
        self.editor.flush()
        path = self.workspace.path(ex)
        text = path.read_text(encoding="utf-8") if path.is_file() else ""
        if self.explanation is not None and self.explained == (ex.id, text):
            if not self.explanation.tier:
                self.profiling = True
                self.card.show_progress("starting Nsight Compute…")
                self._profile(ex, path, self.explanation, self._card_width())
            return
        self.card.show_lines(["Why this speed:", "  reading your kernel…"])
        self._explain(ex, path, None, self._card_width())

    @work(thread=True, group="ex-profile", exit_on_error=False)
    def _profile(self, ex: Exercise, path: Any, e: Any, width: int) -> None:
        """Tier 1 in a thread worker (ncu runs a fresh process, never this one's GPU work);
        escape cancels the worker, which the pass reads as its cancel."""
        from gpulab.explain import card  # deferred: loaded on use
        from gpulab.explain.explainer import tier1  # deferred: loaded on use

        worker = get_current_worker()
        try:
            tier1(
                e,
                ex.id,
                path,
                quiet=True,
                on_progress=self._say_progress,
                cancel=lambda: worker.is_cancelled,
            )
            lines = card.card_lines(e, width)
            lines += [f"  note: {n}"[:width] for n in e.notes if n.startswith("Tier 1")]
        except Cancelled:
            lines = card.card_lines(e, width) + ["  Nsight Compute: cancelled"]
        self.post_message(self.ProfileDone(lines))

    def _say_progress(self, line: str) -> None:
        self.post_message(self.ProfileProgress(line))  # from the thread: post is thread-safe

    @on(ProfileProgress)
    def _profile_progress(self, message: ProfileProgress) -> None:
        if self.profiling:
            self.card.show_progress(message.line)

    @on(ProfileDone)
    def _profile_done(self, message: ProfileDone) -> None:
        self.profiling = False
        self.card.show_lines(message.lines)
        self._show_lines(self.explanation)  # the pass added its measured lines to it

    # ---- the other keys -------------------------------------------------------------------
    def action_predict(self) -> None:
        """f3: type a prediction of the next check's figure (enter checks; escape goes back to
        the code)."""
        if self.current is not None:
            self.remove_class("-side-max")
            self.query_one("#ex-predict", Input).focus()

    async def action_back(self) -> None:
        """Cancel a running explain pass or check, leave the prediction field, else close the
        open exercise."""
        if self.app.focused is self.query_one("#ex-predict", Input):
            self.editor.focus()
        elif self.profiling:
            self.workers.cancel_group(self, "ex-profile")
            self.card.show_progress("cancelling…")
        elif self.checking and self.checker is not None:
            self.verdict.show_progress(0.0, "cancelling…")
            await self.checker.cancel()
        elif self.current is not None:
            self.close_exercise()

    def action_hint(self) -> None:
        """Reveal the next hint and record it in the progress store."""
        ex = self.current
        if ex is None:
            return
        before = Progress(self.store).get(ex.id).hints_revealed
        shown = Progress(self.store).reveal_hint(ex.id, len(ex.hints))
        if shown == before:
            self.app.notify(f"All {len(ex.hints)} hints are shown.", timeout=4)
        self._show_hints()
        self.remove_class("-side-max")
        self.query_one("#ex-hints", Static).scroll_visible(animate=False)
        self.post_message(messages.ProgressChanged(ex.id))

    def action_toggle_side(self) -> None:
        """Give the statement and verdict the whole pane, or the editor its place back."""
        if self.current is not None:
            self.toggle_class("-side-max")

    def action_lesson(self) -> None:
        """Open the lesson the exercise practises."""
        if self.current is not None:
            self.post_message(messages.OpenLesson(self.current.lesson))

    def action_reset(self) -> None:
        """After a confirmation, put the starter back (the learner's version kept in a backup)."""
        # deferred: a screen loads when it first opens
        from gpulab.app.screens.exercise_dialogs import ConfirmReset

        ex = self.current
        if ex is None:
            return
        self.editor.flush()
        where = self.workspace.root / ".backups"

        def answered(yes: bool | None) -> None:
            if not yes or self.current is not ex:
                return
            try:
                _path, backup = self.workspace.reset(ex)
                self.editor.attach(self.workspace, ex)
            except WorkspaceError as exc:
                self.app.notify(str(exc), title="Reset failed", severity="error")
                return
            kept = f"your version is in {backup}" if backup else "it was still the starter"
            self.app.notify(f"{ex.title}: back to the starter; {kept}.", title="Reset", timeout=10)

        self.app.push_screen(ConfirmReset(ex.title, str(where)), answered)

    def _yardstick_key(self) -> str:
        """The record key of the device checks run on (the yardstick's figure there)."""
        index = self.device if isinstance(self.device, int) else 0
        gpu = self.inventory is not None and any(
            d.kind == "cuda" for d in getattr(self.inventory, "devices", [])
        )
        return key_for(self.inventory, index, cpu=not gpu)

    def action_solution(self) -> None:
        """Show the reference solution, once the learner's code has passed."""
        # deferred: a screen loads when it first opens
        from gpulab.app.screens.exercise_dialogs import SolutionScreen

        ex = self.current
        if ex is None:
            return
        if not Progress(self.store).get(ex.id).passed_ever:
            self.app.notify(
                "The solution opens once your code has passed; ctrl+g gives a hint.", timeout=6
            )
            return
        code = ex.solution_path.read_text(encoding="utf-8")
        expert, note = None, ""
        if ex.has_expert:
            best = Progress(self.store).get(ex.id).best_grade
            if best == "gold":
                expert = ex.expert_path.read_text(encoding="utf-8")
                note = f"The expert solution: {yardstick_words(ex, self._yardstick_key())}."
            else:
                note = "An expert solution opens at gold."
        self.app.push_screen(
            SolutionScreen(ex.title, code, python_language(), expert=expert, expert_note=note)
        )
