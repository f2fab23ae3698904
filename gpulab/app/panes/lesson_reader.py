"""The lessons pane's reading side: one lesson's text, its figures, marks and link buttons.

`LessonReader` is a widget of `LessonsPane` (`lessons.py`): it shows a lesson (its text with
this GPU's measured figures filled in, the marks line above it, the run and practise buttons
below it) and tracks when it counts as read. It talks to the pane through Messages:
`LinkClicked` (a link in the text or a run button), `ExerciseChosen` (a practise button) and
`Read` (the lesson's end has been on screen, and the store says so). Separate from the tree
(`lesson_tree.py`), which lists the lessons.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from typing import Any

from textual import on
from textual.app import ComposeResult
from textual.await_complete import AwaitComplete
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.content import Content
from textual.message import Message
from textual.reactive import var
from textual.widget import Widget
from textual.widgets import Button, Markdown, Static

from gpulab.app.panes.lesson_exercises import ExerciseButton
from gpulab.app.panes.lesson_tree import TICK
from gpulab.lessons.catalog import Catalog, Lesson
from gpulab.lessons.markup import ExerciseLink, ExperimentLink
from gpulab.lessons.measured import Measured
from gpulab.store.database import Store


class RunLink(Button):
    """A lesson's `experiment:` link as a button; it carries its link (and no id)."""

    def __init__(self, link: ExperimentLink) -> None:
        super().__init__(
            Content(f"▶ {link.text} (opens it with these values; then Enter runs)"),
            compact=True,
            classes="run-link",
        )
        self.link = link


class LessonReader(Vertical):
    """The open lesson (`#lesson-reader`); the pane gives it the catalog and store (`attach`)
    and binds the figures' sources to it (`data_bind`)."""

    inventory: var[dict[str, Any] | None] = var(None)
    """What the worker says the GPU is."""
    gpus: var[Any] = var(None)
    """NVML's inventory of the GPUs."""
    device: var[int | None] = var(None)
    """The CUDA device a person chose (None: `device_index`)."""
    device_index: var[int] = var(0)
    """The worker's default CUDA device."""
    runs: var[tuple[Any, ...]] = var(())
    """This session's finished runs, oldest first."""

    class LinkClicked(Message):
        """A link in the lesson's text, or a run button (its `experiment:` href), was followed."""

        def __init__(self, href: str) -> None:
            self.href = href
            super().__init__()

    class ExerciseChosen(Message):
        """A practise button was pressed: open `exercise`."""

        def __init__(self, exercise: str) -> None:
            self.exercise = exercise
            super().__init__()

    class Read(Message):
        """`lesson_id`'s end has been on screen: it is marked read in the store."""

        def __init__(self, lesson_id: str) -> None:
            self.lesson_id = lesson_id
            super().__init__()

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.catalog: Catalog | Any = None
        self.store: Store | Any = None
        self.current: str | None = None
        self.covered = False  # the lesson list is shown in its place (a narrow pane)
        self._measured_fixed: Measured | None = None
        self._links: list[ExperimentLink] = []
        self._shown_values: dict[str, Any] | None = None  # the figures the open lesson shows
        self._run_widgets: list[Widget] = []  # under #lesson-runs: a title and one RunLink each
        self._read_armed: str | None = None  # the open lesson, once its text is laid out

    def compose(self) -> ComposeResult:
        """The lesson's heading, its marks, and its text in a scroll."""
        yield Static(id="lesson-heading")
        yield Static(id="lesson-marks")
        with VerticalScroll(id="lesson-scroll"):
            yield Markdown(id="lesson-body", open_links=False)
            yield Vertical(id="lesson-runs")
        with Horizontal(id="lesson-bar"):
            yield Button("◀ Prev", id="lesson-prev", compact=True)
            yield Button("Quiz", id="lesson-quiz", compact=True, variant="primary")
            yield Button("Next ▶", id="lesson-next", compact=True)
            yield Button("☰ Lessons", id="show-contents", compact=True)

    def attach(self, catalog: Catalog, store: Store, measured: Measured | None) -> None:
        """What to read lessons from and where progress goes (the pane's, once it mounts)."""
        self.catalog = catalog
        self.store = store
        self._measured_fixed = measured

    def on_mount(self) -> None:
        """Mark the lesson read once its end has been scrolled into view."""
        self.watch(
            self.query_one("#lesson-scroll", VerticalScroll),
            "scroll_y",
            lambda _: self.check_read(),
            init=False,
        )

    def on_markdown_link_clicked(self, event: Markdown.LinkClicked) -> None:
        """Pass a clicked link up to the pane."""
        event.stop()
        self.post_message(self.LinkClicked(event.href))

    @on(Button.Pressed, ".run-link")
    def _run_button(self, event: Button.Pressed) -> None:
        event.stop()
        if isinstance(event.button, RunLink) and event.button in self._run_widgets:
            self.post_message(self.LinkClicked(event.button.link.href))

    @on(Button.Pressed, ".exercise-link")
    def _exercise_button(self, event: Button.Pressed) -> None:
        event.stop()
        if isinstance(event.button, ExerciseButton) and event.button in self._run_widgets:
            self.post_message(self.ExerciseChosen(event.button.link.exercise))

    def watch_inventory(self) -> None:
        """A new worker's inventory: the open lesson's figures may change."""
        if self.is_mounted and self.current is not None and self.catalog is not None:
            self._show_lesson(self.catalog.get(self.current))

    def measured(self) -> Measured:
        """The figures measured on this machine that the lessons' text fills in."""
        if self._measured_fixed is not None:
            return self._measured_fixed
        device = self.device if self.device is not None else self.device_index
        return Measured.collect(
            self.inventory,
            telemetry=self.gpus,
            device_index=int(device or 0),
            runs=self._finished_runs(),
        )

    def _finished_runs(self) -> list[Any]:
        """Runs that may hold a figure (a bandwidth sweep's pageable rate), newest first.

        This session's finished runs, then the progress store's run history.
        """
        runs: list[Any] = list(reversed(self.runs))
        with contextlib.suppress(Exception):  # a figure the lesson cannot show is no error
            runs.extend(self.store.list_runs("bandwidth", limit=20))
        return runs

    def refresh_measured(self) -> AwaitComplete:
        """Redraw the open lesson's text if the figures it shows have changed."""
        if self.current is None or self.current not in self.catalog:
            return AwaitComplete.nothing()
        measured = self.measured()
        if measured.values == self._shown_values:
            return AwaitComplete.nothing()
        lesson = self.catalog.get(self.current)
        return self.query_one("#lesson-body", Markdown).update(self._markdown(lesson, measured))

    def _markdown(self, lesson: Lesson, measured: Measured) -> str:
        self._shown_values = dict(measured.values)
        objectives = "\n".join(f"- {o}" for o in lesson.objectives)
        return f"**You will be able to**\n\n{objectives}\n\n" + lesson.display_markdown(measured)

    def open_lesson(self, lesson_id: str) -> AwaitComplete:
        """Show `lesson_id` (the pane checks it is in the catalog). It counts as read once its
        end has been on screen (see `check_read`)."""
        lesson = self.catalog.get(lesson_id)
        self.current = lesson_id
        self._read_armed = None  # until the new text is laid out, the scroll size is the old one
        done = self._show_lesson(lesson)
        self.query_one("#lesson-scroll", VerticalScroll).scroll_home(animate=False)

        async def shown() -> None:
            await done
            self.call_after_refresh(self._arm_read, lesson_id)

        return AwaitComplete(shown())

    def _arm_read(self, lesson_id: str) -> None:
        if self.current == lesson_id:
            self._read_armed = lesson_id
            self.check_read()

    def check_read(self) -> None:
        """Mark the open lesson read when the bottom of its text is on screen."""
        lesson_id = self._read_armed
        if lesson_id is None or lesson_id != self.current:
            return
        if self.covered:
            return  # the list is shown, not the lesson
        scroll = self.query_one("#lesson-scroll", VerticalScroll)
        # The end of the lesson's text, not of the pane: the run and practise buttons below it
        # are not reading.
        text_end = self.query_one("#lesson-body", Markdown).virtual_region.bottom
        seen_to = scroll.scroll_y + scroll.scrollable_content_region.height
        if scroll.size.height == 0 or (
            scroll.scroll_y < scroll.max_scroll_y - 1 and seen_to < text_end - 1
        ):
            return
        self._read_armed = None
        try:
            self.store.mark_read(lesson_id)
        except Exception as exc:  # noqa: BLE001 - a full disk must not stop the reading
            self.app.notify(f"Could not save progress: {exc}", severity="warning")
        self.show_marks()
        self.post_message(self.Read(lesson_id))

    def show_marks(self) -> None:
        """Redraw the open lesson's marks line (read, quiz best) from the store."""
        if self.current is not None:
            self._show_marks(self.catalog.get(self.current))

    def _show_marks(self, lesson: Lesson) -> None:
        best = self.store.best_scores().get(lesson.id)
        read = self.store.is_read(lesson.id)
        position = self.catalog.lessons.index(lesson) + 1
        parts = [f"Chapter {lesson.chapter}: {lesson.chapter_title}"]
        parts.append(f"lesson {position} of {len(self.catalog)}")
        if read:
            parts.append(f"{TICK} read")
        if best:
            parts.append(f"quiz best {best.best_score}/{best.total}")
        elif lesson.quiz:
            parts.append(f"quiz: {len(lesson.quiz)} questions")
        self.query_one("#lesson-marks", Static).update(Content(" · ".join(parts)))

    def _show_lesson(self, lesson: Lesson) -> AwaitComplete:
        self.query_one("#lesson-heading", Static).update(Content(lesson.title))
        self._show_marks(lesson)
        text = self._markdown(lesson, self.measured())
        self._links = lesson.links()
        links_done = self._replace_run_links(self._links, lesson.exercise_links())
        catalog = self.catalog
        self.query_one("#lesson-prev", Button).disabled = catalog.previous(lesson.id) is None
        self.query_one("#lesson-next", Button).disabled = catalog.next(lesson.id) is None
        quiz = self.query_one("#lesson-quiz", Button)
        quiz.disabled = not lesson.quiz
        quiz.label = f"Quiz ({len(lesson.quiz)})"
        body_done = self.query_one("#lesson-body", Markdown).update(text)
        return AwaitComplete(links_done, body_done)

    def _replace_run_links(
        self,
        links: list[ExperimentLink],
        exercises: Sequence[ExerciseLink] = (),
    ) -> AwaitComplete:
        """The lesson's run buttons in place of the last lesson's.

        The old widgets are removed in the background while the new ones mount, so the new
        ones carry no ids (a fixed id would clash with the old widget still being removed: two
        lessons in a row crashed the app) and each widget is removed exactly once, however
        quickly lessons follow one another.
        """
        runs = self.query_one("#lesson-runs", Vertical)
        old, self._run_widgets = self._run_widgets, []
        if links:
            self._run_widgets = [
                Static(Content("Run this lesson's experiments:"), classes="runs-title"),
                *(RunLink(link) for link in links),
            ]
        if exercises:
            self._run_widgets += [
                Static(Content("Practise it:"), classes="runs-title"),
                *(ExerciseButton(link) for link in exercises),
            ]
        removed = runs.remove_children(old)
        mounted = runs.mount_all(self._run_widgets) if self._run_widgets else None
        return AwaitComplete(removed, *([mounted] if mounted is not None else []))

    def run_links(self) -> list[RunLink]:
        """The open lesson's run buttons (not the last lesson's, which may still be leaving)."""
        return [w for w in self._run_widgets if isinstance(w, RunLink)]

    def link_buttons(self) -> list[Button]:
        """The run buttons, then the practise (exercise) buttons: what up/down moves through."""
        return [w for w in self._run_widgets if isinstance(w, RunLink | ExerciseButton)]

    def show_overview(self) -> None:
        """Before a lesson is chosen: where the learner stands, without marking anything read."""
        self.query_one("#lesson-heading", Static).update(Content("Syllabus"))
        read = self.store.read_marks()
        best = self.store.best_scores()
        done = sum(1 for le in self.catalog if le.id in read)
        self.query_one("#lesson-marks", Static).update(
            Content(f"{done} of {len(self.catalog)} lessons read · {len(best)} quizzes taken")
        )
        lines = ["Pick a lesson from the tree (enter opens it), or filter with `/`.", ""]
        following = next((le for le in self.catalog if le.id not in read), None)
        if following is not None:
            lines.append(f"Next up: **{following.title}** (chapter {following.chapter}).")
        for button in ("#lesson-prev", "#lesson-next", "#lesson-quiz"):
            self.query_one(button, Button).disabled = True
        self.query_one("#lesson-body", Markdown).update("\n".join(lines))
