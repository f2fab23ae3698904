"""The lesson browser (#lessons): the syllabus as a tree, one lesson at a time, quizzes, progress.

A lesson counts as read once its end has been on screen: scrolled to the bottom, or at once for
one that fits the pane. Opening it is not reading it. The tree has one row per lesson (a chapter
of several lessons gets a row of its own above them); the filter lists the lessons whose title
or headings match first.

Links `experiment:ID?k=v` in a lesson post `messages.RunExperiment`; the app opens the
experiment panel with those values filled in. The same links are also buttons under the
lesson, so they work from the keyboard. The lab's state the lessons' figures use (the store,
the worker's and NVML's inventories, the device, this session's runs) arrives as attributes
the main screen sets; the pane binds them down to its reader.

When the pane is narrow the tree and the lesson take turns (`l` toggles); `m` maximizes it.

This module holds the pane: its layout, keys and actions. The syllabus is a `LessonTree`
(`lesson_tree.py`), the open lesson a `LessonReader` (`lesson_reader.py`: text, figures, marks,
link buttons, read tracking); they tell the pane what happened through Messages
(`LessonTree.Selected`, `LessonReader.LinkClicked`, `.ExerciseChosen`, `.Read`).
"""

from __future__ import annotations

from typing import Any

from textual import on
from textual.app import ComposeResult
from textual.await_complete import AwaitComplete
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.events import Key, Resize
from textual.reactive import var
from textual.widget import Widget
from textual.widgets import Button, Input

from gpulab.app import messages
from gpulab.app.panes.lesson_exercises import ExerciseButton
from gpulab.app.panes.lesson_reader import LessonReader, RunLink
from gpulab.app.panes.lesson_tree import LessonTree
from gpulab.app.store_access import open_store
from gpulab.lessons.catalog import Catalog, default_catalog
from gpulab.lessons.markup import ExperimentLink, parse_experiment_href, validate_link
from gpulab.lessons.measured import Measured
from gpulab.store.database import Store

NARROW_BELOW = 90  # columns: below this the tree and the lesson take turns


class LessonsPane(Widget):
    """Chapters and lessons; the open lesson; next / previous; quiz; progress marks."""

    ALLOW_MAXIMIZE = True
    BINDINGS = [
        Binding("n", "next_lesson", "Next lesson", id="lessons.next"),
        Binding("p", "previous_lesson", "Previous", id="lessons.previous"),
        Binding("t", "quiz", "Quiz", id="lessons.quiz"),
        Binding("slash", "filter", "Filter", id="lessons.filter"),
        Binding("e", "experiments", "Run links", id="lessons.run-links", show=False),
        Binding("l", "contents", "Lessons list", id="lessons.contents", show=False),
        Binding("m", "maximize", "Maximize", id="lessons.maximize", show=False),
    ]

    store: var[Any] = var(None)
    """The progress store (the app's; a bare app's pane opens its own)."""
    inventory: var[dict[str, Any] | None] = var(None)
    """What the worker says the GPU is: the lessons' figures."""
    gpus: var[Any] = var(None)
    """NVML's inventory of the GPUs: the lessons' figures."""
    device: var[int | None] = var(None)
    """The CUDA device a person chose (None: the worker's default, `device_index`)."""
    device_index: var[int] = var(0)
    """The worker's default CUDA device."""
    runs: var[tuple[Any, ...]] = var(())
    """This session's finished runs: a figure a run measured (a bandwidth sweep's)."""
    runner: var[Any] = var(None)
    """The runner client a measured quiz question's probe is submitted to."""

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
        if store is not None:
            self.set_reactive(LessonsPane.store, store)
        self._owns_store = False
        self._measured_fixed = measured  # tests pin the figures; otherwise read on each open

    # ---- building -----------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        """The syllabus tree and its filter, and the lesson reader."""
        with Vertical(id="lesson-nav"):
            # The tree comes first in the focus chain: tab moves between panes here, so the
            # first focusable widget is where the keyboard lands.
            yield LessonTree("Syllabus", id="lesson-tree")
            yield Input(placeholder="Filter lessons (/)", id="lesson-filter")
        yield LessonReader(id="lesson-reader").data_bind(
            LessonsPane.inventory,
            LessonsPane.gpus,
            LessonsPane.device,
            LessonsPane.device_index,
            LessonsPane.runs,
        )

    @property
    def lesson_tree(self) -> LessonTree:
        """The syllabus tree."""
        return self.query_one("#lesson-tree", LessonTree)

    @property
    def reader(self) -> LessonReader:
        """The reader that shows the open lesson."""
        return self.query_one("#lesson-reader", LessonReader)

    @property
    def current(self) -> str | None:
        """The open lesson's id (None before one is chosen)."""
        readers = self.query("#lesson-reader")
        return readers.first(LessonReader).current if readers else None

    @property
    def _ex_marks(self) -> dict[str, tuple[int, int]]:
        return self.lesson_tree.ex_marks

    @property
    def catalog(self) -> Catalog:
        """The lesson catalog, loaded on first use."""
        if self._catalog is None:
            self._catalog = default_catalog()
        return self._catalog

    def _store_notice(self, text: str) -> None:
        """A read or write of the progress file failed: say so; the lab goes on."""
        self.app.notify(text, title="Progress", severity="warning", timeout=10)

    def on_mount(self) -> None:
        """Report broken lesson files, fill the tree and show the overview."""
        if self.store is None:  # a pane on its own (a test's app): a connection of its own
            self.store = open_store(self.app, self._store_notice)
            self._owns_store = True
        if self.store.on_notice is None:
            self.store.on_notice = self._store_notice
            for text in self.store.notices:
                self._store_notice(text)
        for problem in self.catalog.problems:
            self.app.notify(problem, title="A lesson file is broken", severity="error", timeout=15)
        self.reader.attach(self.catalog, self.store, self._measured_fixed)
        self._fill_tree()
        self.reader.show_overview()

    def on_unmount(self) -> None:
        """Close the store if this pane opened it."""
        if self._owns_store and self.store is not None:
            self.store.close()

    def on_resize(self, event: Resize) -> None:
        """Cover the tree with the reader when narrow, and mark the lesson read if its end now
        shows."""
        self.set_class(event.size.width < NARROW_BELOW, "-narrow")
        self._sync_covered()
        self.call_after_refresh(self.reader.check_read)  # a taller pane may now show the end

    def on_descendant_focus(self) -> None:
        """Show any figure a run measured while the pane was away."""
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

    @on(LessonTree.Selected)
    def _lesson_selected(self, event: LessonTree.Selected) -> None:
        event.stop()
        self.open_lesson(event.lesson_id)
        self.query_one("#lesson-scroll", VerticalScroll).focus()

    def on_key(self, event: Key) -> None:
        """Down from the filter goes to the tree; up and down walk a lesson's run and exercise
        links."""
        focused = self.screen.focused
        if event.key == "down" and focused is self.query_one("#lesson-filter", Input):
            event.stop()
            self.lesson_tree.focus()
        elif event.key in ("up", "down") and isinstance(focused, RunLink | ExerciseButton):
            event.stop()
            buttons = self.reader.link_buttons()
            i = -1  # a button of the last lesson, still leaving: back to the text
            if focused in buttons:
                i = buttons.index(focused) + (1 if event.key == "down" else -1)
            if 0 <= i < len(buttons):
                buttons[i].focus()
            else:
                self.query_one("#lesson-scroll", VerticalScroll).focus()

    # ---- the tree and the reader -----------------------------------------------------------
    def _fill_tree(self, text: str = "") -> None:
        self.lesson_tree.fill(self.catalog, self.store, text, self.current)

    def focus_target(self) -> Widget:
        """Where the keyboard lands when the pane is shown (the screen asks after the next
        layout): the open lesson's text while reading, else the syllabus tree. Left to the focus
        chain, it landed on whichever widget came first at that moment: at 80 columns, where the
        text covers the tree, sometimes the hidden filter, so the next `n` was typed there."""
        if self.has_class("-reading") and self.current is not None:
            return self.query_one("#lesson-scroll", VerticalScroll)
        return self.lesson_tree

    def _sync_covered(self) -> None:
        """The reader is covered by the list when the pane is narrow and not reading."""
        self.reader.covered = self.has_class("-narrow") and not self.has_class("-reading")

    def open_lesson(self, lesson_id: str) -> AwaitComplete:
        """Show `lesson_id` (the command palette and the app call this). It counts as read once
        its end has been on screen (the reader's `check_read`)."""
        if lesson_id not in self.catalog:
            self.app.notify(f"There is no lesson '{lesson_id}'.", severity="warning")
            return AwaitComplete.nothing()
        self.add_class("-reading")
        self._sync_covered()
        self.reader.attach(self.catalog, self.store, self._measured_fixed)
        done = self.reader.open_lesson(lesson_id)
        self.lesson_tree.refresh_marks(self.catalog, self.store)
        self.post_message(messages.LessonOpened(lesson_id))
        return done

    def refresh_marks(self) -> None:
        """Redraw the progress marks (the app calls this after an exercise check)."""
        self._refresh_marks()

    def _refresh_marks(self) -> None:
        self.lesson_tree.refresh_marks(self.catalog, self.store)
        self.reader.show_marks()

    def set_inventory(self, inventory: dict[str, Any] | None) -> None:
        """What the GPU is (the worker's Inventory dict), for the lesson's measured figures."""
        self.inventory = inventory

    def refresh_measured(self) -> AwaitComplete:
        """Redraw the open lesson's text if the figures it shows have changed."""
        return self.reader.refresh_measured()

    def run_links(self) -> list[RunLink]:
        """The open lesson's run buttons (not the last lesson's, which may still be leaving)."""
        return self.reader.run_links()

    def link_buttons(self) -> list[Button]:
        """The run buttons, then the practise (exercise) buttons: what up/down moves through."""
        return self.reader.link_buttons()

    @on(LessonReader.Read)
    def _lesson_read(self, event: LessonReader.Read) -> None:
        event.stop()
        self.lesson_tree.refresh_marks(self.catalog, self.store)

    @on(LessonReader.ExerciseChosen)
    def _exercise_chosen(self, event: LessonReader.ExerciseChosen) -> None:
        event.stop()
        self.post_message(messages.OpenExercise(event.exercise))

    # ---- links ---------------------------------------------------------------------------
    @on(LessonReader.LinkClicked)
    def _link_clicked(self, event: LessonReader.LinkClicked) -> None:
        event.stop()
        href = event.href
        if href.startswith("experiment:"):
            self.follow_link(href)
        elif href.startswith("exercise:"):
            self.post_message(messages.OpenExercise(href.partition(":")[2].strip().strip("/")))
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
        self.post_message(messages.RunExperiment(experiment, dict(params)))
        return True

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
        """Open the next lesson."""
        self._step(+1)

    def action_previous_lesson(self) -> None:
        """Open the previous lesson."""
        self._step(-1)

    def action_filter(self) -> None:
        """Show the tree and focus its filter."""
        self.remove_class("-reading")
        self._sync_covered()
        self.query_one("#lesson-filter", Input).focus()

    def action_experiments(self) -> None:
        """Focus the open lesson's first experiment or exercise link."""
        buttons = self.reader.link_buttons()
        if not buttons:
            self.app.notify("This lesson has no experiment or exercise links.")
            return
        buttons[0].focus()

    def action_contents(self) -> None:
        """Show or hide the syllabus tree beside the text."""
        self.toggle_class("-reading")
        self._sync_covered()
        if not self.has_class("-reading"):
            self.lesson_tree.focus()
        else:
            self.call_after_refresh(self.reader.check_read)

    def action_maximize(self) -> None:
        """Give the pane the whole screen, or give it back."""
        screen = self.screen
        if screen.maximized is self:
            screen.minimize()
        else:
            screen.maximize(self, container=False)

    def action_quiz(self) -> None:
        """Open the quiz of the open lesson."""
        if self.current is None:
            self.app.notify("Open a lesson first; its quiz follows it.")
            return
        lesson = self.catalog.get(self.current)
        if not lesson.quiz:
            self.app.notify("This lesson has no quiz.")
            return
        # deferred: a screen loads when it first opens
        from gpulab.app.screens.quiz import QuizScreen

        quiz = QuizScreen(lesson, self.store, runner=self.runner, device=self.device)
        self.app.push_screen(quiz, lambda _: self._refresh_marks())
