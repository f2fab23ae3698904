"""Predict, then measure, under Pilot: the experiment panel's prediction beside the measurement,
an exercise check's, and a lesson's measured quiz question graded by the figure its probe
measures on this machine (the real probe, run inline on the CPU by a fake runner's script)."""

from __future__ import annotations

import asyncio
from typing import Any

from test_app import fake_app, ready, wait_for
from textual.app import App
from textual.widgets import Input, OptionList, Static

from gpulab.app.app import WIDGETS_CSS
from gpulab.app.screens.quiz import LETTERS, QuizScreen
from gpulab.core import events as ev
from gpulab.core.devices import detect
from gpulab.experiments.inline import run_job
from gpulab.experiments.quiz_probes import EXPERIMENT_ID
from gpulab.history.predictions import QUIZ, Predictions
from gpulab.lessons.catalog import load_catalog
from gpulab.store.database import Store
from gpulab.testing.fake_runner import FakeRunner, frozen


def _text(widget: Any) -> str:
    return str(widget.render())


async def test_the_panel_shows_the_prediction_beside_the_measurement():
    app = fake_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await ready(pilot)
        line = app.query_one("#exp-prediction", Static)
        app.query_one("#exp-predict", Input).value = "fast"  # not a prediction: nothing runs
        await pilot.press("r")
        await pilot.pause()
        assert app.panel.live is None
        assert "'fast' is not a prediction" in _text(app.query_one("#run-error", Static))
        app.query_one("#exp-predict", Input).value = "3ms"
        await pilot.press("r")
        await wait_for(pilot, lambda: app.panel.live and app.panel.live.finished, 10, "the run")
        await pilot.pause()
        # the fake run's fastest row: torch-cpu, 5 ms at 10M samples
        shown = _text(line)
        assert shown.startswith("You predicted 3 ms, measured 5 ms (1.67x off: you guessed low)")
        assert "torch-cpu" in shown and "Calibration: your one measured number" in shown
        assert line.display and app.query_one("#exp-predict", Input).value == ""
        app.query_one("#exp-predict", Input).value = "numpy"  # which contender wins
        await pilot.press("r")
        await wait_for(pilot, lambda: app.panel.live.number == 2 and app.panel.live.finished, 10)
        await pilot.pause()
        assert "you predicted numpy wins; torch-cpu won (wrong)" in _text(line).lower()
        kept = Predictions(app.store).all()
        assert [(p.quantity, p.measured) for p in kept] == [("time", 5.0), ("winner", "torch-cpu")]
        await pilot.press("r")  # no prediction this time: the line goes
        await wait_for(pilot, lambda: app.panel.live.number == 3 and app.panel.live.finished, 10)
        await pilot.pause()
        assert not line.display


def _probe_script(figure: float | None = None):
    """A fake runner's script for the quiz probe: the real probe run inline on this CPU, or a
    result carrying `figure` (another machine's measurement, to show the grade follows it)."""

    async def script(job: Any, emit: Any) -> None:
        if figure is None:
            events: list[dict[str, Any]] = []
            await asyncio.to_thread(
                run_job, job.id, job.experiment, job.params, detect(), events.append
            )
            for event in events:
                emit(event)
            return
        emit(frozen(ev.ACCEPTED, job.id, experiment=job.experiment, params=job.params))
        summary = {"figure": figure, "words": f"figure {figure}", "on": "GPU", "device": "X",
                   "where": "the GPU X"}  # fmt: skip
        emit(frozen(ev.RESULT, job.id, result={"summary": summary}))

    return script


class QuizApp(App[None]):
    CSS_PATH = WIDGETS_CSS

    def __init__(self, screen: QuizScreen) -> None:
        super().__init__()
        self.quiz = screen

    def on_mount(self) -> None:
        self.push_screen(self.quiz)


async def _to_measured(pilot: Any, quiz: QuizScreen) -> None:
    """Answer the fixed questions right, up to the measured one."""
    while quiz.question.measure is None:
        await pilot.press(str(quiz.question.answer + 1), "enter")
        await pilot.pause()


async def test_a_measured_question_runs_its_probe_and_grades_by_the_measurement(tmp_path):
    lesson = load_catalog().get("numerics")
    n = next(i for i, q in enumerate(lesson.quiz) if q.measure is not None)
    store = Store(tmp_path / "p.db")
    runner = FakeRunner(script=_probe_script())
    await runner.start()
    quiz = QuizScreen(lesson, store, runner=runner, seed=1)
    app = QuizApp(quiz)
    async with app.run_test(size=(100, 36)) as pilot:
        await _to_measured(pilot, quiz)
        assert "measured on your machine" in _text(quiz.query_one("#quiz-count"))
        q = quiz.question
        await pilot.press("1")  # a prediction: whichever choice shows first
        await wait_for(pilot, lambda: quiz.answered is not None, 120, "the measurement")
        job = runner.jobs[-1]
        assert (job.experiment, job.params) == (EXPERIMENT_ID, {"probe": "atomic-order"})
        measured = job.final["result"]["summary"]
        assert measured["on"] == "CPU" and measured["device"].startswith("CPU")
        right = q.measure.judge(measured["figure"])  # the CPU's index_add_ gives the same bits
        assert q.question.choices[right].startswith("Yes") and measured["figure"] == 1.0
        feedback = _text(quiz.query_one("#quiz-feedback"))
        assert f"Measured on {measured['device']}: the same bits in all 5 runs" in feedback
        assert measured["where"] == measured["device"]  # "CPU (...)": it says it is the CPU
        assert f"{LETTERS[q.right_position(measured['figure'])]}" in feedback
        picked_right = q.original(0) == right
        assert quiz.score == n + picked_right
        answer = store.answers(lesson.id)[-1]
        assert (answer.question_index, answer.choice, answer.correct) == (
            n,
            q.original(0),
            picked_right,
        )
        kept = Predictions(store).all()[-1]
        assert kept.kind == QUIZ and kept.subject == f"numerics question {n + 1}"
        assert kept.measured == q.question.choices[right] and kept.right == picked_right


async def test_the_grade_follows_the_figure_not_a_key(tmp_path):
    """The same pick on two machines: right where the figure says so, wrong where it does not."""
    lesson = load_catalog().get("cuda-graphs")
    outcomes = []
    for figure in (5.0, 60.0):  # 5 us per call: "2 to 10 us"; 60 us: "over 50 us"
        runner = FakeRunner(script=_probe_script(figure))
        await runner.start()
        quiz = QuizScreen(lesson, Store(tmp_path / f"{figure}.db"), runner=runner, seed=3)
        async with QuizApp(quiz).run_test(size=(100, 36)) as pilot:
            await _to_measured(pilot, quiz)
            q = quiz.question
            at = q.position(1)  # "2 to 10 us per call", wherever this attempt shows it
            await pilot.press(str(at + 1))
            await wait_for(pilot, lambda quiz=quiz: quiz.answered is not None, 10, "the grade")
            outcomes.append(q.is_correct(at, figure))
            assert ("✓" in _text(quiz.query_one("#quiz-feedback"))) == outcomes[-1]
    assert outcomes == [True, False]


async def test_without_a_worker_a_measured_question_is_not_scored(tmp_path):
    lesson = load_catalog().get("streams")
    quiz = QuizScreen(lesson, Store(tmp_path / "p.db"), seed=2)  # no runner
    async with QuizApp(quiz).run_test(size=(100, 36)) as pilot:
        await _to_measured(pilot, quiz)
        await pilot.press("1")
        await pilot.pause()
        assert "not scored" in _text(quiz.query_one("#quiz-feedback"))
        await pilot.press("enter")
        await pilot.pause()
        assert quiz.result is not None
        assert (quiz.result.score, quiz.result.total) == (len(lesson.quiz) - 1,) * 2
        assert quiz.query_one("#quiz-choices", OptionList).display is False


async def _inline_check(job: Any, emit: Any) -> None:
    """A fake runner's script for the exercise check: the real check, run in this process."""
    from gpulab.exercises.job import check_inline

    p = job.params
    _, events = await asyncio.to_thread(
        check_inline, p["exercise"], p["path"], p["seed"], quick=True
    )
    for event in events:
        emit(event)


async def test_an_exercise_check_shows_the_prediction_beside_its_measurement():
    from test_app_exercises import open_vector_add

    from gpulab.app.app import GpuLabApp
    from gpulab.exercises.loader import load_catalog as exercises
    from gpulab.exercises.workspace import Workspace

    ex_def = exercises().get("vector-add")
    mine = Workspace().path(ex_def)
    mine.parent.mkdir(parents=True, exist_ok=True)
    mine.write_text(ex_def.solution_path.read_text())
    app = GpuLabApp(
        watch_terminal=False, runner_factory=lambda **kw: FakeRunner(script=_inline_check, **kw)
    )
    async with app.run_test(size=(80, 24)) as pilot:
        ex = await open_vector_add(pilot)
        await pilot.press("f3")  # the prediction field
        assert app.focused is ex.query_one("#ex-predict", Input)
        await pilot.press("4", "0", "%", "enter")  # enter checks
        await wait_for(pilot, lambda: ex.verdict.shown == "result", 120, "the verdict")
        await pilot.pause()
        result = ex.verdict.result
        assert result.passed, result.message
        shown = _text(ex.query_one("#ex-prediction", Static))
        measured = 100 * result.timing["fraction"]
        assert shown.startswith(f"You predicted 40%, measured {measured:.3g}%")
        assert "of the copy ceiling" in shown and "Calibration: your one measured" in shown
        (kept,) = Predictions(ex.store).all()
        assert (kept.kind, kept.subject, kept.measured) == ("exercise", "vector-add", measured)
        assert ex.query_one("#ex-predict", Input).value == ""  # the next check asks again
        await pilot.press("escape")  # out of the field, back to the code
        assert app.focused is ex.editor
