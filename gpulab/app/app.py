"""GpuLabApp: one screen of panes, and the runner whose worker does the GPU work.

The app never imports torch or CuPy: the worker process does, in the background, while the
first frame paints. Every failure (a worker that will not start, a crashed worker, a failed
run, an exception in one of our own workers) becomes a notification or the panel's error box.

This module holds the app: its screen, keys, actions and the handlers of what the panes ask for
(`messages.py`). The lab's shared state is what it inherits from `LabState` (`state.py`); the
worker's life (start, handshake, events, restart, shutdown) is the `WorkerLink` it owns
(`worker_link.py`).
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from textual import on
from textual.actions import SkipAction
from textual.app import App
from textual.binding import Binding
from textual.worker import Worker, WorkerState

from gpulab.app import messages
from gpulab.app.main_screen import MainScreen
from gpulab.app.state import LabState
from gpulab.app.worker_link import (
    RunnerEventArrived,
    RunnerFactory,
    WorkerLink,
    default_runner_factory,
)

if TYPE_CHECKING:
    from textual.command import Provider

    # deferred: the panes (NumPy behind the panel's plots) load after the first frame
    from gpulab.app.panes.exercises import ExercisesPane
    from gpulab.app.panes.experiments import ExperimentPanel
    from gpulab.app.panes.lessons import LessonsPane

QUIT_CONFIRM_S = 4.0
# The lab's stylesheets: its panes', widgets' and windows' own rules (none keeps DEFAULT_CSS),
# which a test's app that mounts one of them alone loads too, then the screen's layout and the
# app-wide looks, which win a tie.
WIDGETS_CSS = Path(__file__).with_name("widgets.tcss")
LAB_CSS = Path(__file__).with_name("gpulab.tcss")


def commands_provider() -> type[Provider]:
    """Imported when the palette first opens, not before the first frame."""
    # deferred: the palette's commands load when it first opens, not before the first frame
    from gpulab.app.commands import GpuLabCommands

    return GpuLabCommands


class GpuLabApp(LabState):
    """The lab: the main screen, the app-wide keys, and the worker link that runs the GPU work."""

    TITLE = "gpulab"
    SUB_TITLE = "starting the worker…"
    CSS_PATH = [str(WIDGETS_CSS), str(LAB_CSS)]  # absolute: subclasses live anywhere
    COMMANDS = App.COMMANDS | {commands_provider}
    BINDINGS = [
        Binding("f1", "help", "Help", id="help"),
        Binding("ctrl+p", "command_palette", "Commands", id="command-palette", priority=True),
        Binding("r", "run", "Run", id="run"),
        Binding("escape", "cancel", "Cancel", id="cancel"),
        Binding("q", "quit", "Quit", id="quit"),
        # the lessons pane's own m (maximize the lesson) wins while it has the keyboard
        Binding("m", "maximize_results", "Maximize results", id="maximize-results"),
        Binding("ctrl+c", "quit", "Quit", id="interrupt", show=False, priority=True),
        # q types a letter while a form field has focus; ctrl+q quits from anywhere, and the
        # footer shows it whenever q is taken (the footer shows one key per action: q first).
        Binding("ctrl+q", "quit", "Quit", id="quit-anywhere", priority=True),
    ]

    def __init__(
        self,
        *,
        runner_factory: RunnerFactory | None = None,
        device_index: int = 0,
        watch_terminal: bool = True,
        sampler: Any = None,
        sample_period: float | None = None,
        **kw: Any,
    ) -> None:
        """`sample_period`: seconds between telemetry reads (0.25-5; None: the sampler's 2 Hz).
        It is handed to the sampler when the panes mount, after the first frame."""
        super().__init__(**kw)
        self.sampler = sampler
        self.sample_period = sample_period
        self.set_reactive(LabState.device_index, device_index)
        # The worker's life (start, handshake, events, restart, shutdown) is the link's.
        self.worker_link = WorkerLink(self, runner_factory or default_runner_factory, device_index)
        self.watch_terminal = watch_terminal
        self._quit_asked = -1e9  # when quitting during a run was last asked about
        self.terminal_watch: Any = None  # gpulab.app.terminal.TerminalWatch, in a terminal
        self.main_ready: asyncio.Event | None = None
        self._jobs = 0  # runs and checks in progress (the gauge samples fast while any is)

    @property
    def worker_log(self) -> list[str]:
        """The worker's own log lines (not a job's), the last 500."""
        return self.worker_link.worker_log

    async def shutdown_runner(self, grace_s: float = 2.0) -> None:
        """Stop the workers; `grace_s`: the worker's time to leave before it is killed."""
        await self.worker_link.shutdown(grace_s)

    def get_default_screen(self) -> MainScreen:
        """The main screen, with the sampler and sample period the app was given."""
        return MainScreen(
            sampler=self.sampler, sample_period=self.sample_period, before_panes=self._open_store
        )

    @property
    def main(self) -> MainScreen:
        """The main screen (the bottom of the stack, whatever is on top of it)."""
        screen = self.screen_stack[0]
        assert isinstance(screen, MainScreen)
        return screen

    # ---- startup ------------------------------------------------------------------------
    def on_mount(self) -> None:
        """Start the worker after the first frame; in a terminal, watch for it hanging up."""
        self.main_ready = self.main_ready or asyncio.Event()
        self.worker_link.main_ready = self.main_ready
        # After the first frame, from a worker: spawning the worker process (and importing the
        # runner client) took ~140 ms of the event loop that the first paint waited for.
        self.call_after_refresh(self.worker_link.begin)
        # In a browser (gpulab serve) stdin is a pipe, not a tty: the session's server ends us.
        if not self.is_headless and self.watch_terminal and not self.is_web:
            # deferred: only a run in a terminal watches it
            from gpulab.app.terminal import TerminalWatch

            self.terminal_watch = TerminalWatch(self)
            self.terminal_watch.install()

    def _open_store(self) -> None:
        """Open the progress store, once: the main screen asks just before its panes mount."""
        # deferred: the store (sqlite3) opens after the first frame
        from gpulab.app.store_access import open_store

        if self.store is None:
            self.store = open_store(self, self._store_notice)

    def _store_notice(self, text: str) -> None:
        """A read or write of the progress file failed: say so; the lab goes on."""
        self.notify(text, title="Progress", severity="warning", timeout=10)

    @property
    def panel(self) -> ExperimentPanel:
        """The experiments panel of the main screen."""
        # deferred: the panel (NumPy behind its plots) loads after the first frame
        from gpulab.app.panes.experiments import ExperimentPanel

        return self.main.query_one("#experiments", ExperimentPanel)

    @property
    def exercises(self) -> ExercisesPane:
        """The exercises pane of the main screen."""
        # deferred: the panes load after the first frame
        from gpulab.app.panes.exercises import ExercisesPane

        return self.main.query_one("#exercises", ExercisesPane)

    @property
    def lessons(self) -> LessonsPane:
        """The lessons pane of the main screen."""
        # deferred: the panes load after the first frame
        from gpulab.app.panes.lessons import LessonsPane

        return self.main.query_one("#lessons", LessonsPane)

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        """The one place our own background tasks' failures become visible."""
        worker = event.worker
        if event.state == WorkerState.ERROR and not self.worker_link.quitting:
            error = worker.error
            self.notify(
                f"{type(error).__name__}: {error}",
                title=f"Internal error in {worker.name or 'a task'}",
                severity="error",
                timeout=10,
            )

    # ---- what the panes ask for (messages.py) ---------------------------------------------
    @on(messages.PanesMounted)
    def _panes_mounted(self) -> None:
        if self.main_ready is None:
            self.main_ready = self.worker_link.main_ready = asyncio.Event()
        self.main_ready.set()

    @on(RunnerEventArrived)
    def _runner_event(self, message: RunnerEventArrived) -> None:
        self.worker_link.on_runner_event(message.event)

    @on(messages.GpuChosen)
    def _gpu_chosen(self, message: messages.GpuChosen) -> None:
        """The gauge follows the selected GPU (NVML's index); runs go to its CUDA index."""
        label = f"cuda:{message.index}" if message.gpus > 1 else ""
        self.gauge_gpu = (message.nvml_index, label)
        if message.initial:
            return  # the worker's default device: nothing a person chose, nothing to say
        self.device = message.index
        self.notify(f"Runs now go to GPU {self.device}.")

    @on(messages.GpusRead)
    def _gpus_read(self, message: messages.GpusRead) -> None:
        self.gpus = message.inventory

    @on(messages.JobStarted)
    def _job_started(self) -> None:
        self._jobs += 1
        self.job_running = True

    @on(messages.JobEnded)
    def _job_ended(self, message: messages.JobEnded) -> None:
        """A run or a check ended: a worker killed by a cancel is replaced."""
        self._jobs = max(0, self._jobs - 1)
        self.job_running = self._jobs > 0
        self.worker_link.check_worker(message.final)

    @on(messages.RunFinished)
    def _run_finished(self, message: messages.RunFinished) -> None:
        self.runs = (*self.runs, message.run)

    @on(messages.RunExperiment)
    def _run_experiment(self, message: messages.RunExperiment) -> None:
        """A lesson's Run link opens the experiment with its values and puts the keyboard on
        ▶ Run: one more key (Enter, or r) runs it, after the learner has seen the values."""
        self.open_experiment(message.experiment, dict(message.params or {}))
        if self._on_main() and self.panel.experiment_id == message.experiment:
            self.panel.query_one("#run").focus()
            self.notify(
                "The lesson's values are filled in: press Enter (or r) to run.",
                title=f"Opened {message.experiment}",
            )

    @on(messages.OpenExercise)
    def _open_exercise(self, message: messages.OpenExercise) -> None:
        self.open_exercise(message.exercise_id)

    @on(messages.OpenLesson)
    def _open_lesson(self, message: messages.OpenLesson) -> None:
        self.open_lesson(message.lesson_id)

    @on(messages.ExerciseOpened)
    def _exercise_opened(self, message: messages.ExerciseOpened) -> None:
        """An exercise was opened: its check's compilations run in the worker while it is read."""
        self.worker_link.prepare_exercise(message.exercise_id)

    @on(messages.ProgressChanged)
    def _progress_changed(self) -> None:
        """An exercise's progress changed: refresh the lesson tree's marks."""
        if self._on_main():
            self.lessons.refresh_marks()

    # ---- what the palette and the keys open ---------------------------------------------
    def open_experiment(self, experiment_id: str, params: dict[str, Any] | None = None) -> None:
        """Show experiment `experiment_id` in the panel with `params`; a notice if it cannot."""
        if not self._on_main():
            self.notify("The lab is still starting; try again in a moment.", severity="warning")
            return
        try:
            self.panel.load(experiment_id, params or {})
        except Exception as exc:  # noqa: BLE001 - a bad lesson link is shown, not raised
            self.notify(str(exc), title="Cannot open experiment", severity="error")
            return
        self.focus_pane("experiments")

    async def open_and_run(self, experiment_id: str) -> None:
        """Open experiment `experiment_id` and start a run of it."""
        self.open_experiment(experiment_id)
        await self.panel.start_run()

    def open_exercise(self, exercise_id: str) -> None:
        """Show the exercises pane with `exercise_id` open (a lesson link, the palette)."""
        if not self._on_main():
            self.notify("The lab is still starting; try again in a moment.", severity="warning")
            return
        if self.exercises.open_exercise(exercise_id):
            self.focus_pane("exercises")

    def open_lesson(self, lesson_id: str) -> None:
        """Show lesson `lesson_id` in the lessons pane."""
        if not self._on_main():
            self.notify("The lab is still starting; try again in a moment.", severity="warning")
            return
        self.lessons.open_lesson(lesson_id)
        self.focus_pane("lessons")

    def focus_pane(self, pane_id: str) -> None:
        """Make pane `pane_id` current and focus it."""
        self.main.show_pane(pane_id)

    # ---- actions ------------------------------------------------------------------------
    def _on_main(self) -> bool:
        """The main screen is showing and its panes have mounted."""
        ready = self.main_ready is not None and self.main_ready.is_set()
        return ready and isinstance(self.screen, MainScreen)

    async def action_run(self) -> None:
        """Run the experiment the panel shows (r)."""
        if not self._on_main():
            raise SkipAction()
        await self.panel.start_run()

    def action_maximize_results(self) -> None:
        """Give the results the whole screen, or give back the maximized widget's room."""
        if not self._on_main() and self.screen.maximized is None:
            raise SkipAction()
        if self.screen.maximized is not None:
            self.screen.minimize()
            return
        self.panel.action_maximize_results()

    async def action_cancel(self) -> None:
        """Cancel the running experiment (escape); skipped when nothing runs."""
        if not self._on_main() or not self.panel.running:
            raise SkipAction()
        await self.panel.cancel_run()

    def action_command_palette(self) -> None:
        """Textual's palette, made to close once (gpulab.app.screens.modal)."""
        from textual.command import CommandPalette

        # deferred: a screen loads when it first opens, not before the first frame
        from gpulab.app.screens.modal import Palette

        # Textual types is_open's app as App[object], and App is invariant in its return type
        if self.use_command_palette and not CommandPalette.is_open(cast("App[object]", self)):
            self.push_screen(Palette(id="--command-palette"))

    def action_help(self) -> None:
        """Show the keys of the focused pane and the app."""
        # deferred: a screen loads when it first opens, not before the first frame
        from gpulab.app.screens.help import HelpScreen, help_sections

        if not isinstance(self.screen, MainScreen):
            return
        self.push_screen(HelpScreen(help_sections(self, self.screen.PANES)))

    async def action_quit(self) -> None:
        """Stop the worker and quit (during a run: only when pressed twice)."""
        if self.worker_link.quitting:
            return
        if self._run_would_be_lost():
            return
        self.worker_link.quitting = True
        await self.shutdown_runner()
        self.exit()

    def _run_would_be_lost(self) -> bool:
        """Quitting during a run asks first: the same key again within a few seconds quits."""
        panel = self.panel if self._on_main() else None
        if panel is None or not panel.running:
            return False
        now = time.monotonic()
        if now - self._quit_asked < QUIT_CONFIRM_S:
            return False
        self._quit_asked = now
        self.notify(
            f"A run is in progress and would be lost. Press q (or ctrl+q) again within "
            f"{QUIT_CONFIRM_S:.0f} s to quit anyway, or escape to cancel the run.",
            title="Quit?",
            severity="warning",
            timeout=QUIT_CONFIRM_S,
        )
        return True

    async def on_unmount(self) -> None:
        """Stop the worker with the app, and close the store."""
        await self.shutdown_runner()
        if self.store is not None:
            self.store.close()
