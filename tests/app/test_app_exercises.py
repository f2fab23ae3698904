"""The Exercises view under Pilot, with the real worker in CPU mode (vector-add is `needs: cpu`).

The whole path: open the view, open an exercise, type a fix into the editor, check it in the
worker, read the verdict, reveal a hint, reset (the old version kept), restart the app and find
the progress. Every wait is for a condition with a deadline.
"""

from __future__ import annotations

import pytest
from test_app import ready, wait_for
from textual.widgets.text_area import Selection

from gpulab.app.app import GpuLabApp
from gpulab.app.main_screen import MainScreen
from gpulab.app.panes.exercises import ExercisesPane
from gpulab.app.screens.exercise_dialogs import ConfirmReset, SolutionScreen
from gpulab.emulator import toolchain
from gpulab.exercises.loader import load_catalog
from gpulab.exercises.progress import Progress
from gpulab.exercises.workspace import Workspace
from gpulab.testing.fake_runner import FakeRunner

FIX = "torch.add(a, b, out=out)"
TIMEOUT = 120


def pane(app: GpuLabApp) -> ExercisesPane:
    return app.query_one("#exercises", ExercisesPane)


def quick_app() -> GpuLabApp:
    return GpuLabApp(watch_terminal=False)


def fake_app() -> GpuLabApp:
    """No worker needed (nothing is checked): the fake runner's handshake is enough."""
    return GpuLabApp(watch_terminal=False, runner_factory=lambda **kw: FakeRunner(**kw))


async def open_vector_add(pilot) -> ExercisesPane:
    app = pilot.app
    await ready(pilot)
    await pilot.press("x")  # the screen's key for the view
    ex = pane(app)
    ex.quick = True
    await wait_for(pilot, lambda: app.focused is ex.query_one("#ex-table"), 5, "the list focus")
    await pilot.press("enter")  # the first row: vector-add
    await wait_for(pilot, lambda: ex.current is not None and app.focused is ex.editor, 5, "open")
    return ex


async def type_fix(pilot, ex: ExercisesPane) -> None:
    """Select the `raise NotImplementedError` line's text and type the fix over it."""
    lines = ex.editor.text.splitlines()
    row = next(i for i, line in enumerate(lines) if "raise NotImplementedError" in line)
    start = len(lines[row]) - len(lines[row].lstrip())
    ex.editor.selection = Selection((row, start), (row, len(lines[row])))
    await pilot.press(*_keys(FIX))


def accepted(ex: ExercisesPane) -> bool:
    job = ex.checker.job if ex.checker is not None else None
    return job is not None and any(e["type"] == "accepted" for e in job.events)


def _keys(text: str) -> list[str]:
    names = {" ": "space", "(": "left_parenthesis", ")": "right_parenthesis", ",": "comma",
             "=": "equals_sign", ".": "full_stop"}  # fmt: skip
    return [names.get(c, c) for c in text]


async def test_open_fix_check_hint_reset_and_find_progress_after_restart():
    size = (80, 24)
    ws = Workspace()
    ex_def = load_catalog().get("vector-add")
    app = quick_app()
    async with app.run_test(size=size) as pilot:
        ex = await open_vector_add(pilot)
        assert isinstance(app.screen, MainScreen) and app.screen.current == "exercises"
        assert ex.editor.text == ex_def.starter_path.read_text()  # the starter, on disk too
        assert ws.path(ex_def).read_text() == ex.editor.text
        # the starter fails: a check before any typing
        await pilot.press("ctrl+r")
        await wait_for(pilot, lambda: ex.verdict.shown == "result", TIMEOUT, "the first verdict")
        assert not ex.verdict.result.passed
        assert "NotImplementedError" in ex.verdict.result.message
        assert "FAIL" in str(ex.verdict.render())
        # type the fix: it reaches the file within a second, without any save key
        await type_fix(pilot, ex)
        assert FIX in ex.editor.text
        await wait_for(pilot, lambda: FIX in ws.path(ex_def).read_text(), 2, "the autosave")
        first = ex.verdict.result
        await pilot.press("ctrl+r")
        # the new check shows its progress; a fast one may already have its verdict
        await wait_for(
            pilot,
            lambda: ex.verdict.shown == "progress" or ex.verdict.result is not first,
            30,
            "the second check to start",
        )
        await wait_for(
            pilot,
            lambda: ex.verdict.shown == "result" and ex.verdict.result is not first,
            TIMEOUT,
            "the verdict",
        )
        result = ex.verdict.result
        assert result.passed, result.message
        shown = str(ex.verdict.render())
        assert "PASS" in shown and "✓" in shown and "n=33" in shown
        assert "Speed" in shown and "%" in shown and ("█" in shown or "░" in shown)
        assert result.timing and result.timing["metric"] == "GB/s"
        # a hint, counted in the store
        await pilot.press("ctrl+g")
        assert "Hint 1/" in str(ex.query_one("#ex-hints").render())
        # the solution opens now that it passed
        await pilot.press("f9")
        await wait_for(pilot, lambda: isinstance(app.screen, SolutionScreen), 5, "solution")
        await pilot.press("escape")
        # reset, confirmed: the starter is back, the fixed version kept in .backups
        await pilot.press("f8")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmReset), 5, "the question")
        await pilot.press("y")
        await wait_for(pilot, lambda: FIX not in ex.editor.text, 5, "the reset")
        assert ws.path(ex_def).read_text() == ex_def.starter_path.read_text()
        assert any(FIX in p.read_text() for p in ws.backups(ex_def))
        # the lesson tree shows the exercise's progress
        lessons = app.query_one("#lessons")
        done, total = lessons._ex_marks[ex_def.lesson]
        assert done == 1 and total >= 1
        await pilot.press("q")
    # a fresh app finds the progress: passing, with a grade, one hint revealed
    app = quick_app()
    async with app.run_test(size=size) as pilot:
        await ready(pilot)
        await pilot.press("x")
        ex = pane(app)
        table = ex.query_one("#ex-table")
        await wait_for(pilot, lambda: table.row_count > 0, 5, "the list")
        row = [str(c) for c in table.get_row("vector-add")]
        assert row[2] == "passing" and row[3] in ("pass", "bronze", "silver", "gold")
        assert "1 of" in str(ex.query_one("#ex-track").render())
        progress = Progress(ex.store).get("vector-add")
        assert progress.hints_revealed == 1 and progress.attempts == 2
        await pilot.press("q")


async def test_reset_can_be_refused_and_escape_goes_back_to_the_list():
    app = fake_app()
    async with app.run_test(size=(80, 24)) as pilot:
        ex = await open_vector_add(pilot)
        await type_fix(pilot, ex)
        await pilot.press("f8")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmReset), 5, "the question")
        await pilot.press("n")
        await wait_for(pilot, lambda: isinstance(app.screen, MainScreen), 5, "the answer")
        assert FIX in ex.editor.text
        # the solution stays closed before a pass
        await pilot.press("f9")
        assert isinstance(app.screen, MainScreen)
        await pilot.press("escape")  # leaves the editor (the editor's own escape)
        await pilot.press("escape")  # back to the list; the text was saved on the way
        await wait_for(pilot, lambda: ex.current is None, 5, "the list")
        assert FIX in Workspace().path(load_catalog().get("vector-add")).read_text()
        await pilot.press("q")


async def test_a_hang_is_cancelled_and_a_crash_survived_and_the_code_stays():
    app = quick_app()
    async with app.run_test(size=(80, 24)) as pilot:
        ex = await open_vector_add(pilot)
        first_pid = app.handshake["pid"]
        hang = "import torch\n\ndef vector_add(a, b, out):\n    while True:\n        pass\n"
        ex.editor.load_text(hang)
        await pilot.press("ctrl+r")
        await wait_for(pilot, lambda: accepted(ex), TIMEOUT, "the job to start")
        await pilot.press("escape", "escape")  # out of the editor, then cancel the check
        await wait_for(pilot, lambda: ex.verdict.shown == "result", TIMEOUT, "the cancel")
        assert not ex.verdict.result.passed, ex.verdict.result
        assert "cancel" in (ex.verdict.result.kind + ex.verdict.result.message).lower()
        assert ex.editor.text == hang and "while True" in Workspace().path(ex.current).read_text()
        await wait_for(pilot, lambda: app.handshake["pid"] != first_pid, TIMEOUT, "new worker")
        crash = "import os\n\ndef vector_add(a, b, out):\n    os._exit(3)\n"
        ex.editor.load_text(crash)
        second_pid = app.handshake["pid"]
        await pilot.press("ctrl+r")
        await wait_for(pilot, lambda: ex.verdict.shown == "result", TIMEOUT, "the crash verdict")
        assert not ex.verdict.result.passed and ex.verdict.result.kind == "crash"
        assert ex.editor.text == crash
        await wait_for(pilot, lambda: app.handshake["pid"] != second_pid, TIMEOUT, "a new worker")
        await pilot.press("q")


def test_every_exercise_link_in_the_lessons_names_an_exercise():
    from gpulab.lessons.catalog import default_catalog

    exercises = load_catalog()
    links = [(le.id, link.exercise) for le in default_catalog() for link in le.exercise_links()]
    assert [(lesson, ex) for lesson, ex in links if ex not in exercises.ids()] == []
    # and every exercise is linked from the lesson it names
    assert [e.id for e in exercises if (e.lesson, e.id) not in links] == []


async def test_a_lesson_link_opens_its_exercise_and_the_tree_counts_it():
    from gpulab.app.panes.lesson_exercises import ExerciseButton

    app = fake_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await ready(pilot)
        lessons = app.query_one("#lessons")
        await lessons.open_lesson("pytorch-on-the-gpu")
        await pilot.pause()
        buttons = [b for b in lessons.link_buttons() if isinstance(b, ExerciseButton)]
        assert [b.link.exercise for b in buttons][0] == "vector-add"
        assert lessons._ex_marks["pytorch-on-the-gpu"][0] == 0
        buttons[0].press()
        ex = pane(app)
        await wait_for(pilot, lambda: ex.current is not None, 5, "the exercise")
        assert ex.current.id == "vector-add" and app.screen.current == "exercises"
        await pilot.press("ctrl+o")  # and back to its lesson
        await wait_for(pilot, lambda: app.screen.current == "lessons", 5, "the lesson")
        assert lessons.current == "pytorch-on-the-gpu"
        await pilot.press("q")


async def test_a_cuda_c_exercise_runs_on_the_emulator_and_says_so(monkeypatch):
    """The real worker with the GPUs hidden from it and a C++ compiler: first-kernel's reference,
    checked from the editor, runs on the CUDA emulator; the verdict carries the label, the
    grade is left out, and the list keeps the pass apart from a grade."""
    if toolchain.compiler() is None:
        pytest.skip("no host C++ compiler for the CUDA emulator")
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    ex_def = load_catalog().get("first-kernel")
    app = quick_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(pilot)
        await pilot.press("x")
        ex = pane(app)
        table = ex.query_one("#ex-table")
        await wait_for(pilot, lambda: ex.machine is not None and table.row_count, 10, "the list")
        assert [str(c) for c in table.get_row("first-kernel")][2:] == ["not started", "emulator"]
        assert "on the CUDA emulator" in str(ex.query_one("#ex-track").render())
        assert ex.open_exercise("first-kernel")
        await wait_for(pilot, lambda: app.focused is ex.editor, 5, "the editor")
        assert "runs on the CPU emulator" in str(ex.verdict.render())
        ex.editor.load_text(ex_def.solution_path.read_text())
        await pilot.press("ctrl+r")
        await wait_for(pilot, lambda: ex.verdict.shown == "result", TIMEOUT, "the verdict")
        result = ex.verdict.result
        assert result.passed and result.emulated, result.message
        shown = str(ex.verdict.render())
        head = shown.splitlines()[0]
        assert "PASS" in head and "on the CUDA emulator" in head and "grade" not in head
        assert "emulator: correctness only, no speed grade" in shown
        await pilot.press("escape", "escape")  # out of the editor, back to the list
        await wait_for(pilot, lambda: ex.current is None, 5, "the list")
        assert [str(c) for c in table.get_row("first-kernel")][2:] == ["passing", "emulator ✓"]
        p = Progress(ex.store).get("first-kernel")
        assert p.only_emulated and p.best_grade is None
        await pilot.press("q")
