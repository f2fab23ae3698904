"""The lessons pane's syllabus tree: one row per lesson, its read mark, quiz best and exercises.

`LessonTreeMixin` is a mixin of `LessonsPane` (`lessons.py`); the pane owns the widgets and the
events (the filter, a row chosen), this part fills the tree and keeps its marks current.
Separate from the reading side (`lesson_reader.py`): the tree changes with progress, the
reader with the open lesson.
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Any

from rich.text import Text
from textual.widgets import Tree

from gpulab.app.panes.lesson_exercises import badge, exercise_marks
from gpulab.lessons.catalog import Catalog, Lesson
from gpulab.store.database import QuizBest, Store

if TYPE_CHECKING:
    from textual.widget import Widget

    _Pane = Widget
else:
    _Pane = object

TICK = "✓"


class LessonTreeMixin(_Pane):
    """Fills `#lesson-tree` and relabels its rows; the pane sets these attributes."""

    catalog: Catalog
    store: Store
    current: str | None
    _ex_marks: dict[str, tuple[int, int]]

    if TYPE_CHECKING:  # the reader's (`LessonReaderMixin`); a real stub would shadow it

        def _show_marks(self, lesson: Lesson) -> None: ...

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
