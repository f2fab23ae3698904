"""The lesson browser (#lessons): the syllabus as a tree, one lesson at a time, quizzes, progress.

A lesson counts as read once its end has been on screen: scrolled to the bottom, or at once for
one that fits the pane. Opening it is not reading it. The tree has one row per lesson (a chapter
of several lessons gets a row of its own above them); the filter lists the lessons whose title
or headings match first.

Links `experiment:ID?k=v` in a lesson post `LessonsPane.RunExperiment`; the app opens the
experiment panel with those values filled in. The same links are also buttons under the
lesson, so they work from the keyboard.

When the pane is narrow the tree and the lesson take turns (`l` toggles); `m` maximizes it.

This module holds the widget: its layout, keys, events and actions. Filling the tree is
`lesson_tree.py`'s; showing a lesson (text, figures, marks, link buttons, read tracking) is
`lesson_reader.py`'s.
"""

from __future__ import annotations

from typing import Any

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.events import Key, Resize
from textual.message import Message
from textual.widget import Widget
from textual.widgets import Button, Input, Markdown, Static, Tree

from gpulab.app.panes.lesson_exercises import ExerciseButton
from gpulab.app.panes.lesson_reader import LessonReaderMixin, RunLink
from gpulab.app.panes.lesson_tree import LessonTreeMixin
from gpulab.app.store_access import open_store
from gpulab.lessons.catalog import Catalog, default_catalog
from gpulab.lessons.markup import ExperimentLink, parse_experiment_href, validate_link
from gpulab.lessons.measured import Measured
from gpulab.store.database import Store

NARROW_BELOW = 90  # columns: below this the tree and the lesson take turns


class LessonsPane(LessonTreeMixin, LessonReaderMixin, Widget):
    """Chapters and lessons; the open lesson; next / previous; quiz; progress marks."""

    ALLOW_MAXIMIZE = True
    DEFAULT_CSS = """
    LessonsPane {
        layout: horizontal;
        height: 1fr;
    }
    LessonsPane #lesson-nav {
        width: 34;
        height: 1fr;
        padding-right: 1;
    }
    LessonsPane #lesson-filter {
        height: 1;
        border: none;
        padding: 0 1;
        margin-top: 1;
    }
    LessonsPane #lesson-tree {
        height: 1fr;
        padding: 0;
    }
    LessonsPane #lesson-reader {
        width: 1fr;
        height: 1fr;
    }
    LessonsPane #lesson-heading {
        height: auto;
        text-style: bold;
        color: $accent;
    }
    LessonsPane #lesson-marks {
        height: auto;
        color: $text-muted;
    }
    LessonsPane #lesson-scroll {
        height: 1fr;
        scrollbar-size-vertical: 1;
    }
    LessonsPane #lesson-body {
        margin: 0;
        padding: 0;
    }
    LessonsPane #lesson-runs {
        height: auto;
    }
    LessonsPane #lesson-runs Button {
        margin-bottom: 1;
    }
    LessonsPane #lesson-bar {
        height: 1;
    }
    LessonsPane #lesson-bar Button {
        width: auto;
        min-width: 0;
        margin-right: 2;
    }
    LessonsPane #lesson-runs Button {
        width: auto;
        min-width: 0;
    }
    LessonsPane.-narrow #lesson-nav {
        width: 1fr;
        padding-right: 0;
    }
    LessonsPane.-narrow.-reading #lesson-nav {
        display: none;
    }
    LessonsPane.-narrow #lesson-reader {
        display: none;
    }
    LessonsPane.-narrow.-reading #lesson-reader {
        display: block;
    }
    LessonsPane #show-contents {
        display: none;
    }
    LessonsPane.-narrow #show-contents {
        display: block;
    }
    """

    BINDINGS = [
        Binding("n", "next_lesson", "Next lesson", id="lessons.next"),
        Binding("p", "previous_lesson", "Previous", id="lessons.previous"),
        Binding("t", "quiz", "Quiz", id="lessons.quiz"),
        Binding("slash", "filter", "Filter", id="lessons.filter"),
        Binding("e", "experiments", "Run links", id="lessons.run-links", show=False),
        Binding("l", "contents", "Lessons list", id="lessons.contents", show=False),
        Binding("m", "maximize", "Maximize", id="lessons.maximize", show=False),
    ]

    class RunExperiment(Message):
        """A lesson's Run link: open `experiment` with `params` (strings, as typed) filled in."""

        def __init__(self, experiment: str, params: dict[str, str]) -> None:
            self.experiment = experiment
            self.params = params
            super().__init__()

    class OpenExercise(Message):
        """An `exercise:` link was followed: the app opens the exercise."""

        def __init__(self, exercise: str) -> None:
            super().__init__()
            self.exercise = exercise

    class LessonOpened(Message):
        def __init__(self, lesson_id: str) -> None:
            self.lesson_id = lesson_id
            super().__init__()

    def __init__(
        self,
        *,
        catalog: Catalog | None = None,
        store: Store | None = None,
        measured: Measured | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self._catalog = catalog
        self._store = store
        self._owns_store = False
        self._measured_fixed = measured  # tests pin the figures; otherwise read on each open
        self._inventory: Any = None
        self.current: str | None = None
        self._links: list[ExperimentLink] = []
        self._shown_values: dict[str, Any] | None = None  # the figures the open lesson shows
        self._run_widgets: list[Widget] = []  # under #lesson-runs: a title and one RunLink each
        self._ex_marks: dict[str, tuple[int, int]] = {}
        self._read_armed: str | None = None  # the open lesson, once its text is laid out

    # ---- building -----------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        with Vertical(id="lesson-nav"):
            # The tree comes first in the focus chain: tab moves between panes here, so the
            # first focusable widget is where the keyboard lands.
            tree: Tree[str] = Tree("Syllabus", id="lesson-tree")
            tree.show_root = False
            tree.guide_depth = 2
            yield tree
            yield Input(placeholder="Filter lessons (/)", id="lesson-filter")
        with Vertical(id="lesson-reader"):
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

    @property
    def catalog(self) -> Catalog:
        if self._catalog is None:
            self._catalog = default_catalog()
        return self._catalog

    @property
    def store(self) -> Store:
        if self._store is None:
            self._store = open_store(self.app, self._store_notice)
            self._owns_store = True
        if self._store.on_notice is None:
            self._store.on_notice = self._store_notice
            for text in self._store.notices:
                self._store_notice(text)
        return self._store

    def _store_notice(self, text: str) -> None:
        """A read or write of the progress file failed: say so; the lab goes on."""
        self.app.notify(text, title="Progress", severity="warning", timeout=10)

    def on_mount(self) -> None:
        for problem in self.catalog.problems:
            self.app.notify(problem, title="A lesson file is broken", severity="error", timeout=15)
        self._fill_tree()
        self._show_overview()
        self.watch(
            self.query_one("#lesson-scroll", VerticalScroll),
            "scroll_y",
            lambda _: self._check_read(),
            init=False,
        )

    def on_unmount(self) -> None:
        if self._owns_store and self._store is not None:
            self._store.close()

    def on_resize(self, event: Resize) -> None:
        self.set_class(event.size.width < NARROW_BELOW, "-narrow")
        self.call_after_refresh(self._check_read)  # a taller pane may now show the end

    def on_descendant_focus(self) -> None:
        # Back from the experiment panel: a run there may have measured a figure this
        # lesson was waiting for.
        self.refresh_measured()

    @on(Input.Changed, "#lesson-filter")
    def _filter_changed(self, event: Input.Changed) -> None:
        event.stop()
        self._fill_tree(event.value)

    @on(Input.Submitted, "#lesson-filter")
    def _filter_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        matches = self.catalog.filter(event.value)
        # A lesson whose title has every word first: "transfers" means the Transfers lesson,
        # not the first lesson that mentions transfers somewhere in its text.
        words = event.value.lower().split()
        titled = [le for le in matches if all(w in f"{le.title} {le.id}".lower() for w in words)]
        if matches:
            self.open_lesson((titled or matches)[0].id)

    @on(Tree.NodeSelected, "#lesson-tree")
    def _node_selected(self, event: Tree.NodeSelected[str]) -> None:
        event.stop()
        if event.node.data:
            self.open_lesson(event.node.data)
            self.query_one("#lesson-scroll", VerticalScroll).focus()

    def on_key(self, event: Key) -> None:
        focused = self.screen.focused
        if event.key == "down" and focused is self.query_one("#lesson-filter", Input):
            event.stop()
            self.query_one("#lesson-tree", Tree).focus()
        elif event.key in ("up", "down") and isinstance(focused, RunLink | ExerciseButton):
            event.stop()
            buttons = self.link_buttons()
            i = -1  # a button of the last lesson, still leaving: back to the text
            if focused in buttons:
                i = buttons.index(focused) + (1 if event.key == "down" else -1)
            if 0 <= i < len(buttons):
                buttons[i].focus()
            else:
                self.query_one("#lesson-scroll", VerticalScroll).focus()

    # ---- links ---------------------------------------------------------------------------
    def on_markdown_link_clicked(self, event: Markdown.LinkClicked) -> None:
        event.stop()
        href = event.href
        if href.startswith("experiment:"):
            self.follow_link(href)
        elif href.startswith("exercise:"):
            self.post_message(self.OpenExercise(href.partition(":")[2].strip().strip("/")))
        elif href.startswith(("http://", "https://")):
            self.app.open_url(href)
        else:
            self.app.notify(f"gpulab cannot open the link {href!r}.", severity="warning")

    def follow_link(self, href: str) -> bool:
        """Post RunExperiment for an experiment link; a link that is wrong is shown, not sent."""
        try:
            experiment, params = parse_experiment_href(href)
        except ValueError as exc:
            self.app.notify(str(exc), title="Broken lesson link", severity="error")
            return False
        problem = validate_link(ExperimentLink(href, href, experiment, params))
        if problem:
            self.app.notify(problem, title="Cannot run this link", severity="error")
            return False
        self.post_message(self.RunExperiment(experiment, dict(params)))
        return True

    @on(Button.Pressed, ".run-link")
    def _run_button(self, event: Button.Pressed) -> None:
        event.stop()
        if isinstance(event.button, RunLink) and event.button in self._run_widgets:
            self.follow_link(event.button.link.href)

    @on(Button.Pressed, ".exercise-link")
    def _exercise_button(self, event: Button.Pressed) -> None:
        event.stop()
        if isinstance(event.button, ExerciseButton) and event.button in self._run_widgets:
            self.post_message(self.OpenExercise(event.button.link.exercise))

    # ---- navigation and actions ----------------------------------------------------------
    @on(Button.Pressed, "#lesson-prev")
    def _prev_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.action_previous_lesson()

    @on(Button.Pressed, "#lesson-next")
    def _next_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.action_next_lesson()

    @on(Button.Pressed, "#lesson-quiz")
    def _quiz_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.action_quiz()

    @on(Button.Pressed, "#show-contents")
    def _contents_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.action_contents()

    def _step(self, delta: int) -> None:
        if self.current is None:
            target = self.catalog.lessons[0] if self.catalog.lessons and delta > 0 else None
        elif delta > 0:
            target = self.catalog.next(self.current)
        else:
            target = self.catalog.previous(self.current)
        if target is None:
            self.app.bell()
            return
        self.open_lesson(target.id)

    def action_next_lesson(self) -> None:
        self._step(+1)

    def action_previous_lesson(self) -> None:
        self._step(-1)

    def action_filter(self) -> None:
        self.remove_class("-reading")
        self.query_one("#lesson-filter", Input).focus()

    def action_experiments(self) -> None:
        buttons = self.link_buttons()
        if not buttons:
            self.app.notify("This lesson has no experiment or exercise links.")
            return
        buttons[0].focus()

    def action_contents(self) -> None:
        self.toggle_class("-reading")
        if not self.has_class("-reading"):
            self.query_one("#lesson-tree", Tree).focus()
        else:
            self.call_after_refresh(self._check_read)

    def action_maximize(self) -> None:
        screen = self.screen
        if screen.maximized is self:
            screen.minimize()
        else:
            screen.maximize(self, container=False)

    def action_quiz(self) -> None:
        if self.current is None:
            self.app.notify("Open a lesson first; its quiz follows it.")
            return
        lesson = self.catalog.get(self.current)
        if not lesson.quiz:
            self.app.notify("This lesson has no quiz.")
            return
        # deferred: a screen loads when it first opens
        from gpulab.app.screens.quiz import QuizScreen

        self.app.push_screen(QuizScreen(lesson, self.store), lambda _: self._refresh_marks())
