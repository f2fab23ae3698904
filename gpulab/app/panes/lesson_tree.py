"""The lessons pane's syllabus tree: one row per lesson, its read mark, quiz best and exercises.

`LessonTree` is a widget of `LessonsPane` (`lessons.py`): it fills itself from the catalog and
the progress store, keeps its marks current, and posts `LessonTree.Selected` when a lesson's
row is chosen; the pane opens it. Separate from the reading side (`lesson_reader.py`): the
tree changes with progress, the reader with the open lesson.
"""

from __future__ import annotations

import contextlib
from typing import Any

from rich.text import Text
from textual.message import Message
from textual.widgets import Tree

from gpulab.app.panes.lesson_exercises import badge, exercise_marks
from gpulab.lessons.catalog import Catalog, Lesson
from gpulab.store.database import QuizBest, Store

TICK = "✓"


class LessonTree(Tree[str]):
    """The syllabus (`#lesson-tree`): a row per lesson; choosing one posts `Selected`."""

    class Selected(Message):
        """A lesson's row was chosen (enter or a click): the pane opens `lesson_id`."""

        def __init__(self, lesson_id: str) -> None:
            self.lesson_id = lesson_id
            super().__init__()

    def __init__(self, label: str = "Syllabus", **kwargs: Any) -> None:
        super().__init__(label, **kwargs)
        self.show_root = False
        self.guide_depth = 2
        self.ex_marks: dict[str, tuple[int, int]] = {}

    def on_tree_node_selected(self, event: Tree.NodeSelected[str]) -> None:
        """Post `Selected` with the chosen lesson's id."""
        event.stop()
        if event.node.data:
            self.post_message(self.Selected(event.node.data))

    def _label(self, lesson: Lesson, best: dict[str, QuizBest], read: set[str]) -> Text:
        mark = f"{TICK} " if lesson.id in read else "  "
        score = best.get(lesson.id)
        quiz = f"  {score.best_score}/{score.total}" if score else ""
        ex = badge(self.ex_marks, lesson.id)
        return Text.assemble(
            (mark, "bold green"),
            f"{lesson.chapter:>2} ",
            lesson.title,
            (quiz, "bold"),
            (ex, "cyan"),
        )

    def fill(
        self, catalog: Catalog, store: Store, text: str = "", current: str | None = None
    ) -> None:
        """One row per lesson. Unfiltered, in reading order, a chapter of several lessons under
        a row of its own; filtered, a flat list with title and heading matches first."""
        self.clear()
        self.ex_marks = exercise_marks(store)
        lessons = catalog.filter(text)
        read = set(store.read_marks())
        best = store.best_scores()
        # (lesson, its parent: the root, or its chapter's row) in reading order; a chapter's row
        # is made when its first lesson comes, so it sits between the chapters around it
        rows: list[tuple[Lesson, Any]] = []
        if text.strip():
            rows = [(lesson, None) for lesson in lessons]
        else:
            for chapter in catalog.chapters(lessons):
                group = chapter if len(chapter.lessons) > 1 else None
                rows += [(lesson, group) for lesson in chapter.lessons]
        cursor_to = None
        made: dict[int, Any] = {}
        for lesson, chapter in rows:
            parent = self.root
            if chapter is not None:
                if chapter.number not in made:
                    title = Text(f"   {chapter.number:>2} {chapter.title}")
                    made[chapter.number] = self.root.add(title, data="", expand=True)
                parent = made[chapter.number]
            leaf = parent.add_leaf(self._label(lesson, best, read), data=lesson.id)
            if lesson.id == current and not text.strip():
                cursor_to = leaf
            elif cursor_to is None and (text.strip() or lesson.id not in read):
                cursor_to = leaf  # the best match, or the first lesson not read yet
        if not lessons:
            self.root.add_leaf(Text("No lesson matches the filter."), data="")
        if cursor_to is not None:
            # After the refresh: until the tree has laid out its lines, move_cursor leaves the
            # cursor on the first line (a chapter), and enter folded it instead of opening the
            # lesson the overview calls "next up".
            self.call_after_refresh(self._cursor_to, cursor_to)

    def _cursor_to(self, node: Any) -> None:
        with contextlib.suppress(Exception):  # refilled since (UnknownNodeID): that fill placed it
            if self.get_node_by_id(node.id) is node:
                self.move_cursor(node)

    def _lesson_rows(self, catalog: Catalog) -> list[Any]:
        nodes = [*self.root.children]
        nodes += [leaf for node in self.root.children for leaf in node.children]
        return [node for node in nodes if node.data and node.data in catalog]

    def refresh_marks(self, catalog: Catalog, store: Store) -> None:
        """Relabel every lesson's row from the progress store."""
        self.ex_marks = exercise_marks(store)
        read = set(store.read_marks())
        best = store.best_scores()
        for row in self._lesson_rows(catalog):
            row.set_label(self._label(catalog.get(row.data), best, read))
