"""Command palette (ctrl+p): run any experiment, open any lesson, focus a pane, pick a theme."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

from textual.command import DiscoveryHit, Hit, Hits, Provider

from gpulab.experiments.registry import all_experiments

# The syllabus's fixed ids, in chapter order (the lesson catalog may add titles).
LESSON_IDS = (
    "why-gpus", "inside-the-gpu", "cuda-programming-model", "checking-your-setup",
    "cupy-numpy-for-gpus", "pytorch-on-the-gpu", "timing-honestly", "parallel-patterns",
    "memory-management", "transfers", "dtypes-and-tensor-cores", "performance-regimes",
    "mixed-precision", "profiling", "many-gpus", "debugging", "applications",
)  # fmt: skip


def lesson_titles() -> list[tuple[str, str]]:
    """(id, title) for every lesson; the catalog's titles when it loads, else the ids."""
    try:
        # deferred: the catalogs (YAML) load when the palette asks, not before the first frame
        from gpulab.lessons import catalog as cat

        loader = getattr(cat, "load_catalog", None) or getattr(cat, "load", None)
        if loader is not None:
            return [(lesson.id, lesson.title) for lesson in loader()]
    except Exception:  # noqa: BLE001 - a broken lesson file must not break the palette
        pass
    return [(i, i.replace("-", " ").capitalize()) for i in LESSON_IDS]


def exercise_titles() -> list[tuple[str, str]]:
    """(id, title) for every exercise; empty when the catalog does not load."""
    try:
        # deferred: the catalogs (YAML) load when the palette asks, not before the first frame
        from gpulab.exercises.loader import load_catalog

        return [(ex.id, f"{ex.order}. {ex.title}") for ex in load_catalog()]
    except Exception:  # noqa: BLE001 - a broken exercise folder must not break the palette
        return []


class GpuLabCommands(Provider):
    """The palette's commands: experiments, lessons, exercises, panes and themes."""

    def _commands(self) -> list[tuple[str, Callable[[], Any], str]]:
        app: Any = self.app
        out: list[tuple[str, Callable[[], Any], str]] = []
        for exp in all_experiments().values():
            out.append(
                (f"Run experiment: {exp.title}", partial(app.open_and_run, exp.id), exp.summary)
            )
            out.append(
                (f"Open experiment: {exp.title}", partial(app.open_experiment, exp.id), exp.id)
            )
        for lesson_id, title in lesson_titles():
            out.append((f"Open lesson: {title}", partial(app.open_lesson, lesson_id), lesson_id))
        for ex_id, title in exercise_titles():
            out.append((f"Open exercise: {title}", partial(app.open_exercise, ex_id), ex_id))
        for pane in app.main.PANES:
            out.append(
                (f"Focus pane: {pane.title}", partial(app.focus_pane, pane.id), f"#{pane.id}")
            )
        for theme in sorted(app.available_themes):
            out.append((f"Theme: {theme}", partial(setattr, app, "theme", theme), "colours"))
        out.append(("Help: keys and how to use gpulab", app.action_help, "F1"))
        return out

    async def discover(self) -> Hits:
        """What the palette lists before anything is typed: experiments, panes, help."""
        for name, callback, help_text in self._commands():
            if name.startswith(("Run experiment", "Focus pane", "Help")):
                yield DiscoveryHit(name, callback, help=help_text)

    async def search(self, query: str) -> Hits:
        """Every command whose name matches `query`, scored and highlighted."""
        matcher = self.matcher(query)
        for name, callback, help_text in self._commands():
            score = matcher.match(name)
            if score > 0:
                yield Hit(score, matcher.highlight(name), callback, help=help_text)
                continue
            # An id typed as the CLI takes it ("ddp-overlap"), which the title may not hold
            by_id = matcher.match(help_text)
            if by_id > 0:
                yield Hit(by_id * 0.9, name, callback, help=help_text)
