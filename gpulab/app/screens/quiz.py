"""A lesson's quiz: one question at a time, a second try after a wrong answer, best kept.

A wrong first answer is struck out and the learner picks again (or asks for the answer) before
the explanation shows: a second look teaches more than being told at once. Only the first answer
counts for the score and is saved, as it is given (so a quiz left half-way still counts as
practice); the score of a quiz finished to the end updates the lesson's best score.

Each attempt shows every question's choices in a fresh order (`shuffle_quiz`; a measured
question's ranges stay in order), so a retake asks
for the idea again, not for the letter remembered from the last time. Letters, keys and the
struck-out choice are positions on the screen; what is saved is the choice's index in the lesson
file, so saved answers mean the same thing whatever order showed them. `seed` fixes the orders
(tests); without it every attempt draws new ones.

A measured question (one with `measure:` in the lesson) has no answer written down: the learner
picks a prediction, then the screen submits the question's probe (the hidden `quiz-measure` job,
gpulab.experiments.quiz_probes) to the lab's runner, in the worker, and the figure measured on
this device decides which choice was right. There is no second try (the measurement has told the
answer); the pick is kept with the predictions (gpulab.history.predictions) as well as with the
answers. A measurement that cannot run (no worker, a failure) leaves the question unscored, said
so, and the quiz goes on.

Quiz text is written like the lessons: `code` in backticks. It is shown as code (styled, the
backticks dropped); everything else is literal text, so brackets in a question are never markup.
"""

from __future__ import annotations

import asyncio
import random
import re
from dataclasses import dataclass
from typing import Any

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.widgets import Button, OptionList, Static
from textual.widgets.option_list import Option

from gpulab.app.screens.modal import OnceModal
from gpulab.core import events as ev
from gpulab.experiments.quiz_probes import EXPERIMENT_ID as MEASURE_ID
from gpulab.history.predictions import CHOICE, QUIZ, Guess, Predictions
from gpulab.lessons.catalog import Lesson
from gpulab.lessons.lesson_format import ShuffledQuestion, shuffle_quiz
from gpulab.store.database import Store

LETTERS = "ABCDEFGHIJ"
CODE_STYLE = "bold $text-accent"
# A code span as CommonMark has it: a run of backticks, then the same run again.
_CODE_SPAN = re.compile(r"(?<!`)(`+)(?!`)(.+?)(?<!`)\1(?!`)", re.S)


def inline_code(text: str, style: str = CODE_STYLE) -> Content:
    """`text` with its `code` spans styled as code and their backticks removed.

    A backtick without a partner stays as it is. As in Markdown, one space just inside both
    ends of a span is padding (so a span can start or end with a backtick): it is dropped.
    """
    parts: list[str | tuple[str, str]] = []
    pos = 0
    for m in _CODE_SPAN.finditer(text):
        code = m.group(2)
        if len(code) > 2 and code.startswith(" ") and code.endswith(" ") and code.strip():
            code = code[1:-1]
        parts.append(text[pos : m.start()])
        parts.append((code, style))
        pos = m.end()
    parts.append(text[pos:])
    return Content.assemble(*parts)


@dataclass(frozen=True)
class QuizResult:
    """How a quiz went: the lesson, the score out of the total."""

    lesson_id: str
    score: int
    total: int
    best_score: int
    best_total: int


class QuizScreen(OnceModal[QuizResult | None]):
    """A lesson's quiz, one question at a time, each answer explained and recorded."""

    BINDINGS = [
        Binding("escape", "close", "Close quiz", id="quiz.close"),
        *[
            Binding(str(n), f"choose({n - 1})", f"Answer {n}", id=f"quiz.answer-{n}", show=False)
            for n in range(1, 10)
        ],
    ]

    def __init__(
        self,
        lesson: Lesson,
        store: Store | None = None,
        *,
        seed: int | None = None,
        runner: Any = None,
        device: int | None = None,
    ) -> None:
        """`runner` and `device`: where a measured question's probe runs (the lab's runner; None:
        measured questions cannot be measured, and are not scored)."""
        super().__init__()
        self.lesson = lesson
        self.store = store
        self.runner = runner
        self.device = device
        self.measuring = False  # a measured question's probe is running
        self.measured: dict[str, Any] | None = None  # its result's summary, once in
        self.unscored = 0  # measured questions that could not be measured, this attempt
        self.rng = random.Random(seed)
        self.shown: tuple[ShuffledQuestion, ...] = shuffle_quiz(lesson.quiz, self.rng)
        self.index = 0
        self.score = 0
        self.answered: int | None = None  # the last choice (its position), once settled
        self.tried: list[int] = []  # positions chosen for the current question, in order
        self.result: QuizResult | None = None

    def compose(self) -> ComposeResult:
        """The title, the question count, the question, its choices, the explanation and the buttons."""
        with Vertical(id="quiz-box"):
            yield Static(Content(f"Quiz: {self.lesson.title}"), id="quiz-title")
            yield Static(id="quiz-count")
            yield Static(id="quiz-question")
            yield OptionList(id="quiz-choices")
            yield Static(id="quiz-feedback")
            with Horizontal(id="quiz-buttons"):
                nxt = Button("Next question", id="quiz-next", variant="primary", compact=True)
                # Textual ignores a second press within the active effect (0.2 s); a learner
                # typing "2⏎2⏎" quickly must not lose the second Enter.
                nxt.active_effect_duration = 0
                yield nxt
                yield Button("Show the answer", id="quiz-reveal", compact=True)
                yield Button("Take it again", id="quiz-again", compact=True)
                yield Button("Close", id="quiz-close", compact=True)

    def on_mount(self) -> None:
        """Show the first question."""
        self._show_question()

    # ---- one question -------------------------------------------------------------------
    @property
    def question(self) -> ShuffledQuestion:
        """The current question, as this attempt shows it."""
        return self.shown[self.index]

    def _show_question(self) -> None:
        q = self.question
        self.answered = None
        self.tried = []
        self.measured = None
        total = len(self.lesson.quiz)
        measured = " · measured on your machine" if q.measure else ""
        self.query_one("#quiz-count", Static).update(
            Content(f"Question {self.index + 1} of {total} · score so far {self.score}{measured}")
        )
        self.query_one("#quiz-question", Static).update(inline_code(q.q))
        choices = self.query_one("#quiz-choices", OptionList)
        choices.disabled = False
        choices.clear_options()
        choices.add_options(
            [
                Option(Content.assemble(f"{LETTERS[i]}. ", inline_code(text)), id=f"choice-{i}")
                for i, text in enumerate(q.choices)
            ]
        )
        choices.highlighted = 0
        choices.display = True
        feedback = self.query_one("#quiz-feedback", Static)
        feedback.update(
            "Pick your prediction; gpulab then measures it on this machine." if q.measure else ""
        )
        feedback.remove_class("-right", "-wrong")
        self.query_one("#quiz-next", Button).display = False
        self.query_one("#quiz-reveal", Button).display = False
        self.query_one("#quiz-again", Button).display = False
        choices.focus()

    @on(OptionList.OptionSelected, "#quiz-choices")
    def _selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self.answer(event.option_index)

    def action_choose(self, index: int) -> None:
        """Answer with choice `index` (the number keys)."""
        if self.result is None and index < len(self.question.choices):
            self.answer(index)

    def answer(self, choice: int) -> bool:
        """Answer the current question with the choice shown at position `choice` (0-based);
        returns whether it was right.

        A wrong first answer leaves the question open for a second try; a choice already tried
        is ignored."""
        if self.answered is not None or self.result is not None or choice in self.tried:
            return False
        if self.measuring:
            return False
        q = self.question
        if q.measure is not None:
            self._predict(choice)
            return False
        right = q.is_correct(choice)
        first_try = not self.tried
        self.tried.append(choice)
        if first_try:
            self.score += int(right)
            if self.store is not None:
                try:
                    self.store.record_answer(self.lesson.id, self.index, q.original(choice), right)
                except Exception as exc:  # noqa: BLE001 - the quiz goes on; the learner is told
                    self.app.notify(f"Could not save the answer: {exc}", severity="warning")
        if not right and first_try:
            self._second_try(choice)
            return False
        self._settle(choice, right)
        return right

    def _second_try(self, wrong: int) -> None:
        choices = self.query_one("#quiz-choices", OptionList)
        choices.disable_option(f"choice-{wrong}")
        if choices.highlighted == wrong:
            choices.highlighted = next(i for i in range(choices.option_count) if i != wrong)
        feedback = self.query_one("#quiz-feedback", Static)
        feedback.update(
            Content(f"✗ Not {LETTERS[wrong]}. Think it through once more and pick another answer.")
        )
        feedback.set_class(False, "-right")
        feedback.set_class(True, "-wrong")
        self.query_one("#quiz-reveal", Button).display = True
        choices.focus()

    @on(Button.Pressed, "#quiz-reveal")
    def _reveal(self, event: Button.Pressed) -> None:
        event.stop()
        self.reveal()

    def reveal(self) -> None:
        """Give up the second try: show the answer and the explanation."""
        if self.answered is None and self.result is None and self.tried:
            self._settle(self.tried[-1], False)

    # ---- a measured question -----------------------------------------------------------
    def _predict(self, choice: int) -> None:
        """The learner's pick of a measured question: measure it in the worker, then grade."""
        self.tried.append(choice)
        feedback = self.query_one("#quiz-feedback", Static)
        self.query_one("#quiz-choices", OptionList).disabled = True
        if self.runner is None:
            self._unmeasured(choice, "the worker is not running")
            return
        self.measuring = True
        feedback.update(Content(f"You predicted {LETTERS[choice]}. Measuring it on this machine…"))
        self._measure(choice)

    @work(exclusive=True, group="quiz-measure", exit_on_error=False)
    async def _measure(self, choice: int) -> None:
        """Run the question's probe in the worker (the lab's runner, on the event loop) and grade
        the pick by its figure; a screen closed meanwhile cancels the job."""
        probe = self.question.measure.probe if self.question.measure else ""
        job: Any = None
        try:
            job = await self.runner.submit(MEASURE_ID, {"probe": probe}, device=self.device)
            async for _event in job:
                pass
        except asyncio.CancelledError:
            if job is not None and not job.done:
                asyncio.ensure_future(self.runner.cancel(job))  # the screen went: stop the probe
            raise
        except Exception as exc:  # noqa: BLE001 - a dead worker costs this question's score only
            self.measuring = False
            self._unmeasured(choice, f"{type(exc).__name__}: {exc}")
            return
        self.measuring = False
        final = (job.final if job is not None else None) or {}
        summary = (final.get("result") or {}).get("summary") or {}
        if final.get("type") != ev.RESULT or "figure" not in summary:
            self._unmeasured(choice, str(final.get("message") or "the measurement ended early"))
            return
        self._graded(choice, summary)

    def _graded(self, choice: int, summary: dict[str, Any]) -> None:
        """Grade the pick of a measured question by the figure in `summary` (the probe's)."""
        q = self.question
        figure = float(summary["figure"])
        right = q.is_correct(choice, figure)
        self.measured = summary
        self.score += int(right)
        if self.store is not None:
            try:
                self.store.record_answer(self.lesson.id, self.index, q.original(choice), right)
                kept = Predictions(self.store)
                subject = f"{self.lesson.id} question {self.index + 1}"
                pending = kept.predict(QUIZ, subject, Guess(CHOICE, q.choices[choice]))
                where = f"on {summary.get('where', 'this machine')}: {summary.get('words', '')}"
                kept.measure(
                    pending,
                    q.choices[q.right_position(figure)],
                    device=str(summary.get("device", "")),
                    note=where,
                )
            except Exception as exc:  # noqa: BLE001 - the quiz goes on; the learner is told
                self.app.notify(f"Could not save the answer: {exc}", severity="warning")
        self._settle(choice, right)

    def _unmeasured(self, choice: int, why: str) -> None:
        """A measured question whose probe could not run: unscored, said so, the quiz goes on."""
        self.unscored += 1
        self.answered = choice
        feedback = self.query_one("#quiz-feedback", Static)
        feedback.update(
            Content.assemble(
                f"Could not measure it here ({why}); this question is not scored.\n",
                inline_code(self.question.explain),
            )
        )
        feedback.remove_class("-right", "-wrong")
        self._show_next()

    def _settle(self, choice: int, right: bool) -> None:
        q = self.question
        self.answered = choice
        feedback = self.query_one("#quiz-feedback", Static)
        if self.measured is not None:
            figure = float(self.measured["figure"])
            at = q.right_position(figure)
            said = (
                f"Measured on {self.measured.get('where', 'this machine')}: "
                f"{self.measured.get('words', '')}.\n"
            )
            verdict = (
                f"✓ You predicted it: {LETTERS[at]}. "
                if right
                else f"✗ You predicted {LETTERS[choice]}; here it is {LETTERS[at]}. "
            )
            text = Content.assemble(said, verdict, inline_code(q.choices[at]), "\n",
                                    inline_code(q.explain))  # fmt: skip
        elif right and len(self.tried) > 1:
            text = Content.assemble(
                "✓ Right, on the second try (the score counts first answers). ",
                inline_code(q.explain),
            )
        elif right:
            text = Content.assemble("✓ Right. ", inline_code(q.explain))
        else:
            text = Content.assemble(
                f"✗ Not quite: the answer is {LETTERS[q.answer]}. ",
                inline_code(q.choices[q.answer]),
                "\n",
                inline_code(q.explain),
            )
        feedback.update(text)
        feedback.set_class(right, "-right")
        feedback.set_class(not right, "-wrong")
        self._show_next()

    def _show_next(self) -> None:
        self.query_one("#quiz-choices", OptionList).disabled = True
        self.query_one("#quiz-reveal", Button).display = False
        last = self.index + 1 == len(self.lesson.quiz)
        nxt = self.query_one("#quiz-next", Button)
        nxt.label = "See your score" if last else "Next question"
        nxt.display = True
        nxt.focus()

    @on(Button.Pressed, "#quiz-next")
    def _next(self, event: Button.Pressed) -> None:
        event.stop()
        self.next_question()

    def next_question(self) -> None:
        """Go on to the next question once this one is answered; after the last, show the score."""
        if self.answered is None:
            return
        if self.index + 1 < len(self.lesson.quiz):
            self.index += 1
            self._show_question()
        else:
            self._finish()

    # ---- the end ------------------------------------------------------------------------
    def _finish(self) -> None:
        total = len(self.lesson.quiz) - self.unscored  # a question not measured is not scored
        best_score, best_total = self.score, total
        if self.store is not None and total > 0:
            try:
                best = self.store.record_quiz(self.lesson.id, self.score, total)
                best_score, best_total = best.best_score, best.total
            except Exception as exc:  # noqa: BLE001 - an unsaved score is a notice, the quiz ends
                self.app.notify(f"Could not save the score: {exc}", severity="warning")
        self.result = QuizResult(self.lesson.id, self.score, total, best_score, best_total)
        self.query_one("#quiz-count", Static).update(Content("Finished"))
        verdict = "All right!" if self.score == total else "Reread the lesson and try again."
        self.query_one("#quiz-question", Static).update(
            Content(f"You scored {self.score} of {total}. {verdict}")
        )
        self.query_one("#quiz-choices", OptionList).display = False
        feedback = self.query_one("#quiz-feedback", Static)
        feedback.remove_class("-right", "-wrong")
        feedback.update(Content(f"Your best for this lesson: {best_score} of {best_total}."))
        self.query_one("#quiz-next", Button).display = False
        self.query_one("#quiz-again", Button).display = True
        self.query_one("#quiz-close", Button).focus()

    @on(Button.Pressed, "#quiz-again")
    def _again(self, event: Button.Pressed) -> None:
        event.stop()
        self.shown = shuffle_quiz(self.lesson.quiz, self.rng)  # a new attempt, a new order
        self.index = 0
        self.score = 0
        self.unscored = 0
        self.result = None
        self._show_question()

    @on(Button.Pressed, "#quiz-close")
    def _close(self, event: Button.Pressed) -> None:
        event.stop()
        self.action_close()

    def action_close(self) -> None:
        """Close the quiz with its result (None if it was not finished)."""
        self.dismiss(self.result)
