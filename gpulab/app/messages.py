"""What the panes tell the lab: the Messages that travel up, from a pane to the screen and the app.

Textual's rule is "attributes down, messages up": a pane never reaches into a sibling or into
the app. It posts one of these; the app (`app.py`) or the main screen (`main_screen.py`) handles
it with `@on(...)`, changes the lab's shared state (`state.py`), and the screen hands the new
state down to the panes that show it. Light on purpose (no pane imports it drags in), so the
app can name every message it handles before the panes load.
"""

from __future__ import annotations

from typing import Any

from textual.message import Message


class OpenLesson(Message):
    """Show lesson `lesson_id` in the lessons pane (an exercise's ctrl+o, a result's lesson)."""

    def __init__(self, lesson_id: str) -> None:
        self.lesson_id = lesson_id
        super().__init__()


class OpenExercise(Message):
    """Show exercise `exercise_id` in the exercises pane (a lesson's `exercise:` link)."""

    def __init__(self, exercise_id: str) -> None:
        self.exercise_id = exercise_id
        super().__init__()


class RunExperiment(Message):
    """A lesson's Run link: open `experiment` with `params` (strings, as typed) filled in."""

    def __init__(self, experiment: str, params: dict[str, str]) -> None:
        self.experiment = experiment
        self.params = params
        super().__init__()


class GpuChosen(Message):
    """A GPU was selected in the GPU info pane: runs go to CUDA `index`, the gauge follows NVML's
    `nvml_index`; `initial`: the pane's own first pick, not a person's choice."""

    def __init__(self, index: int, nvml_index: int, gpus: int, initial: bool = False) -> None:
        self.index = index
        self.nvml_index = nvml_index
        self.gpus = gpus
        self.initial = initial
        super().__init__()


class GpusRead(Message):
    """The GPU info pane read NVML's inventory (what the GPUs are): the lessons' figures use it."""

    def __init__(self, inventory: Any) -> None:
        self.inventory = inventory
        super().__init__()


class LessonOpened(Message):
    """A lesson opened in the lessons pane's reader."""

    def __init__(self, lesson_id: str) -> None:
        self.lesson_id = lesson_id
        super().__init__()


class ExerciseOpened(Message):
    """An exercise was opened: the worker can compile what its check needs meanwhile."""

    def __init__(self, exercise_id: str) -> None:
        self.exercise_id = exercise_id
        super().__init__()


class ProgressChanged(Message):
    """An attempt or a hint changed an exercise's progress (the lesson tree redraws its marks)."""

    def __init__(self, exercise_id: str) -> None:
        self.exercise_id = exercise_id
        super().__init__()


class JobStarted(Message):
    """A pane submitted a job (a run or a check): the gauge samples fast and tracks its peak."""


class JobEnded(Message):
    """A pane's job ended with `final` (its final event): a worker killed by a cancel is
    replaced, and the gauge goes back to its idle rate."""

    def __init__(self, final: dict[str, Any] | None) -> None:
        self.final = final or {}
        super().__init__()


class RunFinished(Message):
    """An experiment run ended (`run`: its gpulab.app.runs.RunState): the session's runs grow,
    and a lesson waiting for a figure it measured can show it."""

    def __init__(self, run: Any) -> None:
        self.run = run
        super().__init__()


class PanesMounted(Message):
    """The main screen's panes have mounted: the lab can hand them work."""
