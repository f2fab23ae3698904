"""GpuLabApp: one screen, four panes, and the runner whose worker does the GPU work.

The app never imports torch or CuPy: the worker process does, in the background, while the
first frame paints. Every failure (a worker that will not start, a crashed worker, a failed
run, an exception in one of our own workers) becomes a notification or the panel's error box.

This module holds the app: its screen, keys, actions and what the panes ask for. The worker's
life (start, handshake, events, restart, shutdown) is the `WorkerLink` it owns (`worker_link.py`).
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from textual.actions import SkipAction
from textual.app import App
from textual.binding import Binding
from textual.worker import Worker, WorkerState

from gpulab.app.gauge import GpuSelected, tell_gauge
from gpulab.app.main_screen import MainScreen
from gpulab.app.worker_link import RunnerFactory, WorkerLink, default_runner_factory

if TYPE_CHECKING:
    from textual.command import Provider

    # deferred: the panel (NumPy behind its plots) loads after the first frame
    from gpulab.app.panes.experiments import ExperimentPanel

QUIT_CONFIRM_S = 4.0


def commands_provider() -> type[Provider]:
    """Imported when the palette first opens, not before the first frame."""
    # deferred: the palette's commands load when it first opens, not before the first frame
    from gpulab.app.commands import GpuLabCommands

    return GpuLabCommands


class GpuLabApp(App[None]):
    """The lab: the main screen, the app-wide keys, and the worker link that runs the GPU work."""

    TITLE = "gpulab"
    SUB_TITLE = "starting the worker…"
    CSS_PATH = str(Path(__file__).with_name("gpulab.tcss"))  # absolute: subclasses live anywhere
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
        self.device_index = device_index
        self.device: int | None = None  # set when the GPU pane picks one
        # The worker's life (start, handshake, events, restart, shutdown) is the link's.
        self.worker_link = WorkerLink(self, runner_factory or default_runner_factory, device_index)
        self.watch_terminal = watch_terminal
        self._quit_asked = -1e9  # when quitting during a run was last asked about
        self.terminal_watch: Any = None  # gpulab.app.terminal.TerminalWatch, in a terminal
        self.main_ready: asyncio.Event | None = None

    @property
    def runner(self) -> Any:
        """The runner client the panes submit to (None before the worker starts and after quit)."""
        return self.worker_link.runner

    @property
    def handshake(self) -> dict[str, Any] | None:
        """The worker's hello (its pid, inventory, versions), once it is ready."""
        return self.worker_link.handshake

    @property
    def worker_log(self) -> list[str]:
        """The worker's own log lines (not a job's), the last 500."""
        return self.worker_link.worker_log

    def check_worker(self, final: dict[str, Any] | None = None) -> None:
        """After a run: a worker killed by a cancel is replaced (panes call this)."""
        self.worker_link.check_worker(final)

    async def shutdown_runner(self, grace_s: float = 2.0) -> None:
        """Stop the workers; `grace_s`: the worker's time to leave before it is killed."""
        await self.worker_link.shutdown(grace_s)

    def get_default_screen(self) -> MainScreen:
        """The main screen, with the sampler and sample period the app was given."""
        return MainScreen(sampler=self.sampler, sample_period=self.sample_period)

    # ---- startup ------------------------------------------------------------------------
    def on_mount(self) -> None:
        """Start the worker after the first frame; in a terminal, watch for it hanging up."""
        self.main_ready = self.main_ready or asyncio.Event()
        # After the first frame, from a worker: spawning the worker process (and importing the
        # runner client) took ~140 ms of the event loop that the first paint waited for.
        self.call_after_refresh(self.worker_link.begin)
        # In a browser (gpulab serve) stdin is a pipe, not a tty: the session's server ends us.
        if not self.is_headless and self.watch_terminal and not self.is_web:
            # deferred: only a run in a terminal watches it
            from gpulab.app.terminal import TerminalWatch

            self.terminal_watch = TerminalWatch(self)
            self.terminal_watch.install()

    @property
    def panel(self) -> ExperimentPanel:
        """The experiments panel of the main screen."""
        # deferred: the panel (NumPy behind its plots) loads after the first frame
        from gpulab.app.panes.experiments import ExperimentPanel

        return self.screen_stack[0].query_one("#experiments", ExperimentPanel)

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

    # ---- what the panes ask for ---------------------------------------------------------
    def on_gpu_info_pane_selected(self, message: Any) -> None:
        """The gauge follows the selected GPU (NVML's index); runs go to its CUDA index."""
        index = int(message.index)
        label = f"cuda:{index}" if getattr(message, "gpus", 1) > 1 else ""
        tell_gauge(self, GpuSelected(int(message.nvml_index), label))
        if getattr(message, "initial", False):
            return  # the worker's default device: nothing a person chose, nothing to say
        self.device = index
        self.notify(f"Runs now go to GPU {self.device}.")

    def on_lessons_pane_run_experiment(self, message: Any) -> None:
        """A lesson's Run link opens the experiment with its values and puts the keyboard on
        ▶ Run: one more key (Enter, or r) runs it, after the learner has seen the values."""
        self.open_experiment(message.experiment, dict(message.params or {}))
        if self._on_main() and self.panel.experiment_id == message.experiment:
            self.panel.query_one("#run").focus()
            self.notify(
                "The lesson's values are filled in: press Enter (or r) to run.",
                title=f"Opened {message.experiment}",
            )

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

    def on_lessons_pane_open_exercise(self, message: Any) -> None:
        """A lesson's exercise link: open that exercise."""
        self.open_exercise(message.exercise)

    def on_exercises_pane_opened(self, message: Any) -> None:
        """An exercise was opened: its check's compilations run in the worker while it is read."""
        self.worker_link.prepare_exercise(message.exercise_id)

    def on_exercises_pane_progress_changed(self, message: Any) -> None:
        """An exercise's progress changed: refresh the lesson tree's marks."""
        for lessons in self.screen_stack[0].query("#lessons"):
            refresh = getattr(lessons, "refresh_marks", None)
            if refresh is not None:
                refresh()

    def open_exercise(self, exercise_id: str) -> None:
        """Show the exercises pane with `exercise_id` open (a lesson link, the palette)."""
        if not self._on_main():
            self.notify("The lab is still starting; try again in a moment.", severity="warning")
            return
        pane = self.screen_stack[0].query_one("#exercises")
        if pane.open_exercise(exercise_id):  # type: ignore[attr-defined]
            self.focus_pane("exercises")

    def open_lesson(self, lesson_id: str) -> None:
        """Show lesson `lesson_id` in the lessons pane."""
        lessons = self.screen_stack[0].query_one("#lessons")
        opener = getattr(lessons, "open_lesson", None)
        if opener is None:
            self.notify(f"The lesson browser cannot open '{lesson_id}' yet.", severity="warning")
            return
        opener(lesson_id)
        self.focus_pane("lessons")

    def focus_pane(self, pane_id: str) -> None:
        """Make pane `pane_id` current and focus it."""
        screen = self.screen_stack[0]
        if isinstance(screen, MainScreen):
            screen.show_pane(pane_id)

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
        self.push_screen(HelpScreen(help_sections(self)))

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
        """Stop the worker with the app."""
        await self.shutdown_runner()
