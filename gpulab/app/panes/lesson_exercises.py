"""What the lesson browser shows of the exercises: a button per `exercise:` link, and per lesson
how many of its exercises have passed (the tree's `ex 1/2`)."""

from __future__ import annotations

from typing import Any

from textual.content import Content
from textual.widgets import Button

from gpulab.lessons.markup import ExerciseLink


class ExerciseButton(Button):
    """A lesson's `exercise:` link as a button; it carries its link (and no id)."""

    def __init__(self, link: ExerciseLink) -> None:
        super().__init__(Content(f"✎ {link.text}"), compact=True, classes="exercise-link")
        self.link = link


def exercise_marks(store: Any) -> dict[str, tuple[int, int]]:
    """lesson id -> (exercises passed, exercises) for every lesson that has exercises."""
    try:
        # deferred: the exercise catalog loads after the first frame
        from gpulab.exercises.loader import load_catalog
        from gpulab.exercises.progress import Progress

        catalog = load_catalog()
        progress = Progress(store).all()
    except Exception:  # noqa: BLE001 - a broken exercise folder must not break the lessons
        return {}
    marks: dict[str, tuple[int, int]] = {}
    for ex in catalog:
        done, total = marks.get(ex.lesson, (0, 0))
        p = progress.get(ex.id)
        marks[ex.lesson] = (done + int(bool(p and p.passed_ever)), total + 1)
    return marks


def badge(marks: dict[str, tuple[int, int]], lesson_id: str) -> str:
    """ "  ex done/total" for the lesson's exercises, or "" when it has none."""
    done, total = marks.get(lesson_id, (0, 0))
    return f"  ex {done}/{total}" if total else ""
