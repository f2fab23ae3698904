"""The lesson browser (#lessons): the syllabus as a tree, one lesson at a time, quizzes, progress.

A lesson counts as read once its end has been on screen: scrolled to the bottom, or at once for
one that fits the pane. Opening it is not reading it. The tree has one row per lesson (a chapter
of several lessons gets a row of its own above them); the filter lists the lessons whose title
or headings match first.

Links `experiment:ID?k=v` in a lesson post `LessonsPane.RunExperiment`; the app opens the
experiment panel with those values filled in. The same links are also buttons under the
lesson, so they work from the keyboard.

When the pane is narrow the tree and the lesson take turns (`l` toggles); `m` maximizes it.
"""

from __future__ import annotations

import contextlib
from typing import Any

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.await_complete import AwaitComplete
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.content import Content
from textual.events import Key, Resize
from textual.message import Message
from textual.widget import Widget
from textual.widgets import Button, Input, Markdown, Static, Tree

from gpulab.app.panes.lesson_exercises import ExerciseButton, badge, exercise_marks
from gpulab.lessons.catalog import (
    Catalog,
    ExerciseLink,
    ExperimentLink,
    Lesson,
    default_catalog,
    parse_experiment_href,
    validate_link,
)
from gpulab.lessons.measured import Measured
from gpulab.store import QuizBest, Store

NARROW_BELOW = 90  # columns: below this the tree and the lesson take turns
TICK = "✓"


class RunLink(Button):
    """A lesson's `experiment:` link as a button; it carries its link (and no id)."""

    def __init__(self, link: ExperimentLink) -> None:
        super().__init__(
            Content(f"▶ {link.text} (opens it with these values; then Enter runs)"),
            compact=True,
            classes="run-link",
        )
        self.link = link


class LessonsPane(Widget):
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
            from gpulab.app.store_access import open_store

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

    def set_inventory(self, inventory: Any) -> None:
        """What the GPU is (the worker's Inventory dict), for the lesson's measured figures.

        Optional: without it the pane asks the app for its handshake and the GPU info pane
        for its NVML inventory each time a lesson opens.
        """
        self._inventory = inventory
        if self.current is not None:
            self._show_lesson(self.catalog.get(self.current))

    def measured(self) -> Measured:
        if self._measured_fixed is not None:
            return self._measured_fixed
        app: Any = self.app
        inventory = self._inventory
        if inventory is None:
            inventory = (getattr(app, "handshake", None) or {}).get("inventory")
        telemetry = None
        for pane in self.screen.query("#gpu-info"):
            telemetry = getattr(pane, "inventory", None)
        device = getattr(app, "device", None)
        if device is None:
            device = getattr(app, "device_index", 0)
        return Measured.collect(
            inventory,
            telemetry=telemetry,
            device_index=int(device or 0),
            runs=self._finished_runs(),
        )

    def _finished_runs(self) -> list[Any]:
        """Runs that may hold a figure (a bandwidth sweep's pageable rate), newest first.

        This session's runs from the experiment panel, then the progress store's run history.
        """
        runs: list[Any] = []
        for panel in self.screen.query("#experiments"):
            runs.extend(reversed(list(getattr(panel, "runs", None) or [])))
        with contextlib.suppress(Exception):  # a figure the lesson cannot show is no error
            runs.extend(self.store.list_runs("bandwidth", limit=20))
        return runs

    def on_descendant_focus(self) -> None:
        # Back from the experiment panel: a run there may have measured a figure this
        # lesson was waiting for.
        self.refresh_measured()

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

    # ---- the tree -----------------------------------------------------------------------
    def _label(self, lesson: Lesson, best: dict[str, QuizBest], read: set[str]) -> Text:
        mark = f"{TICK} " if lesson.id in read else "  "
        score = best.get(lesson.id)
        quiz = f"  {score.best_score}/{score.total}" if score else ""
        ex = badge(self._ex_marks, lesson.id)
        return Text.assemble(
            (mark, "bold green"),
            f"{lesson.chapter:>2} ",
            lesson.title,
            (quiz, "bold"),
            (ex, "cyan"),
        )

    def _fill_tree(self, text: str = "") -> None:
        """One row per lesson. Unfiltered, in reading order, a chapter of several lessons under
        a row of its own; filtered, a flat list with title and heading matches first."""
        tree: Tree[str] = self.query_one("#lesson-tree", Tree)
        tree.clear()
        self._ex_marks = exercise_marks(self.store)
        lessons = self.catalog.filter(text)
        read = set(self.store.read_marks())
        best = self.store.best_scores()
        rows: list[tuple[Lesson, Any]] = []
        if text.strip():
            rows = [(lesson, tree.root) for lesson in lessons]
        else:
            for chapter in self.catalog.chapters(lessons):
                parent = tree.root
                if len(chapter.lessons) > 1:
                    title = Text(f"   {chapter.number:>2} {chapter.title}")
                    parent = tree.root.add(title, data="", expand=True)
                rows += [(lesson, parent) for lesson in chapter.lessons]
        cursor_to = None
        for lesson, parent in rows:
            leaf = parent.add_leaf(self._label(lesson, best, read), data=lesson.id)
            if lesson.id == self.current and not text.strip():
                cursor_to = leaf
            elif cursor_to is None and (text.strip() or lesson.id not in read):
                cursor_to = leaf  # the best match, or the first lesson not read yet
        if not lessons:
            tree.root.add_leaf(Text("No lesson matches the filter."), data="")
        if cursor_to is not None:
            # After the refresh: until the tree has laid out its lines, move_cursor leaves the
            # cursor on the first line (a chapter), and enter folded it instead of opening the
            # lesson the overview calls "next up".
            self.call_after_refresh(self._cursor_to, tree, cursor_to)

    @staticmethod
    def _cursor_to(tree: Tree[str], node: Any) -> None:
        with contextlib.suppress(Exception):  # refilled since (UnknownNodeID): that fill placed it
            if tree.get_node_by_id(node.id) is node:
                tree.move_cursor(node)

    def _lesson_rows(self) -> list[Any]:
        tree: Tree[str] = self.query_one("#lesson-tree", Tree)
        nodes = [*tree.root.children]
        nodes += [leaf for node in tree.root.children for leaf in node.children]
        return [node for node in nodes if node.data and node.data in self.catalog]

    def refresh_marks(self) -> None:
        """Redraw the progress marks (the app calls this after an exercise check)."""
        self._refresh_marks()

    def _refresh_marks(self) -> None:
        self._ex_marks = exercise_marks(self.store)
        read = set(self.store.read_marks())
        best = self.store.best_scores()
        for row in self._lesson_rows():
            row.set_label(self._label(self.catalog.get(row.data), best, read))
        if self.current is not None:
            self._show_marks(self.catalog.get(self.current))

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

    # ---- one lesson ---------------------------------------------------------------------
    def open_lesson(self, lesson_id: str) -> AwaitComplete:
        """Show `lesson_id` (the command palette and the app call this). It counts as read once
        its end has been on screen (see `_check_read`)."""
        if lesson_id not in self.catalog:
            self.app.notify(f"There is no lesson '{lesson_id}'.", severity="warning")
            return AwaitComplete.nothing()
        lesson = self.catalog.get(lesson_id)
        self.current = lesson_id
        self._read_armed = None  # until the new text is laid out, the scroll size is the old one
        self.add_class("-reading")
        done = self._show_lesson(lesson)
        self._refresh_marks()
        self.query_one("#lesson-scroll", VerticalScroll).scroll_home(animate=False)
        self.post_message(self.LessonOpened(lesson_id))

        async def shown() -> None:
            await done
            self.call_after_refresh(self._arm_read, lesson_id)

        return AwaitComplete(shown())

    def _arm_read(self, lesson_id: str) -> None:
        if self.current == lesson_id:
            self._read_armed = lesson_id
            self._check_read()

    def _check_read(self) -> None:
        """Mark the open lesson read when the bottom of its text is on screen."""
        lesson_id = self._read_armed
        if lesson_id is None or lesson_id != self.current:
            return
        if self.has_class("-narrow") and not self.has_class("-reading"):
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
        self._refresh_marks()

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
        exercises: list[ExerciseLink] = (),  # type: ignore[assignment]
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

    def _show_overview(self) -> None:
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
        from gpulab.app.screens.quiz import QuizScreen

        self.app.push_screen(QuizScreen(lesson, self.store), lambda _: self._refresh_marks())
