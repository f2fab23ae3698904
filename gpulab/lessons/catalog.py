"""The lesson catalog: content/*.md parsed, validated and ordered. Headless (no textual, no torch).

A lesson file is YAML front matter between `---` lines, then a Markdown body (the format is in
the team's lesson-format.md and in the module docstring of each content file's neighbours).
The front matter's rules live in schema.py and the body's links, code blocks and measured
values in markup.py; this module holds lessons once loaded, and loads them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

from gpulab.core.front_matter import read_front_matter
from gpulab.lessons.lesson_format import CHAPTERS, LessonFormatError, Question, validate_meta
from gpulab.lessons.markup import (
    MEASURED,
    CodeBlock,
    ExerciseLink,
    ExperimentLink,
    extract_code_blocks,
    extract_exercise_links,
    extract_links,
    headings,
    plain_fences,
    substitute_measured,
)


@dataclass(frozen=True)
class Lesson:
    """One lesson: front matter, body and quiz."""

    id: str
    chapter: int
    order: int
    title: str
    objectives: tuple[str, ...]
    experiments: tuple[str, ...]
    quiz: tuple[Question, ...]
    body: str
    source: str  # file name, for messages
    body_line: int = 1  # line in the file where the body starts

    @property
    def chapter_title(self) -> str:
        """The lesson's chapter title."""
        return CHAPTERS.get(self.chapter, f"Chapter {self.chapter}")

    def links(self) -> list[ExperimentLink]:
        """The experiment links in the body."""
        return extract_links(self.body, self.source)

    def exercise_links(self) -> list[ExerciseLink]:
        """The exercise links in the body."""
        return extract_exercise_links(self.body, self.source)

    def code_blocks(self) -> list[CodeBlock]:
        """The fenced code blocks in the body, with their file lines."""
        return extract_code_blocks(self.body, self.body_line)

    def matches(self, text: str) -> bool:
        """Case-insensitive match of every word of `text` in the title, objectives or body."""
        return self.match_rank(text) is not None

    def headings(self) -> list[str]:
        """The body's `#` headings, outside code blocks."""
        return headings(self.body)

    def match_rank(self, text: str) -> int | None:
        """How well `text` matches (every word, any case): 0 in the title and headings, 1 with
        the objectives too, 2 anywhere in the body; None when some word is nowhere."""
        words = text.lower().split()
        if not words:
            return 0
        fields = (
            "\n".join((self.title, *self.headings(), self.chapter_title)),
            "\n".join((*self.objectives, self.id)),
            self.body,
        )
        haystack = ""
        for rank, part in enumerate(fields):
            haystack += "\n" + part.lower()
            if all(w in haystack for w in words):
                return rank
        return None

    def measured_keys(self) -> list[str]:
        """The measured-figure keys the body refers to."""
        return MEASURED.findall(self.body)

    def display_markdown(self, measured: Callable[[str], str] | None = None) -> str:
        """The body as the browser shows it: measured values filled in, fences made plain."""
        body = substitute_measured(self.body, measured) if measured else self.body
        return plain_fences(body)


@dataclass(frozen=True)
class Chapter:
    """A chapter's number, title and lessons."""

    number: int
    title: str
    lessons: tuple[Lesson, ...]


@dataclass
class Catalog:
    """Lessons in reading order (chapter, order, id) plus the problems met while loading."""

    lessons: list[Lesson] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.lessons.sort(key=lambda le: (le.chapter, le.order, le.id))
        self._by_id = {le.id: le for le in self.lessons}

    def __iter__(self) -> Iterator[Lesson]:
        return iter(self.lessons)

    def __len__(self) -> int:
        return len(self.lessons)

    def __contains__(self, lesson_id: object) -> bool:
        return lesson_id in self._by_id

    def get(self, lesson_id: str) -> Lesson:
        """The lesson `lesson_id`; KeyError naming the known ones when there is none."""
        try:
            return self._by_id[lesson_id]
        except KeyError:
            known = ", ".join(self._by_id) or "none loaded"
            raise KeyError(f"unknown lesson '{lesson_id}'; known: {known}") from None

    def chapters(self, lessons: Iterable[Lesson] | None = None) -> list[Chapter]:
        """The lessons (all by default) grouped into chapters, in order."""
        grouped: dict[int, list[Lesson]] = {}
        for lesson in self.lessons if lessons is None else lessons:
            grouped.setdefault(lesson.chapter, []).append(lesson)
        return [
            Chapter(n, CHAPTERS.get(n, f"Chapter {n}"), tuple(grouped[n])) for n in sorted(grouped)
        ]

    def _step(self, lesson_id: str, delta: int) -> Lesson | None:
        index = self.lessons.index(self.get(lesson_id)) + delta
        return self.lessons[index] if 0 <= index < len(self.lessons) else None

    def next(self, lesson_id: str) -> Lesson | None:
        """The lesson after `lesson_id`, or None."""
        return self._step(lesson_id, +1)

    def previous(self, lesson_id: str) -> Lesson | None:
        """The lesson before `lesson_id`, or None."""
        return self._step(lesson_id, -1)

    def filter(self, text: str) -> list[Lesson]:
        """Lessons matching `text`: title and heading matches first, then objectives, then the
        body; reading order within each."""
        ranked = [(le.match_rank(text), i, le) for i, le in enumerate(self.lessons)]
        return [le for rank, _, le in sorted(r for r in ranked if r[0] is not None)]

    def questions(self) -> int:
        """Quiz questions across every lesson."""
        return sum(len(le.quiz) for le in self.lessons)


def parse_lesson(text: str, source: str) -> Lesson:
    """One lesson from its file text; raises LessonFormatError naming `source`."""
    front = read_front_matter(text, source, LessonFormatError)
    fields = validate_meta(front.meta, source)
    if not front.body.strip():
        raise LessonFormatError(source, "the lesson has no body after the front matter")
    return Lesson(**fields, body=front.body, source=source, body_line=front.body_line)


# --- loading -------------------------------------------------------------------------------


def _content_files() -> list[tuple[str, str]]:
    root = resources.files("gpulab.lessons") / "content"
    if not root.is_dir():
        return []
    files = [p for p in root.iterdir() if p.name.endswith(".md") and p.is_file()]
    return [(p.name, p.read_text(encoding="utf-8")) for p in sorted(files, key=lambda p: p.name)]


def _dir_files(directory: Path) -> list[tuple[str, str]]:
    return [(p.name, p.read_text(encoding="utf-8")) for p in sorted(Path(directory).glob("*.md"))]


def load_catalog(directory: str | Path | None = None, *, strict: bool = False) -> Catalog:
    """Every lesson in the package's content/ (or `directory`).

    strict=False (the app, the CLI): a broken file is left out and its error kept in
    `catalog.problems`, so one bad lesson never hides the other sixteen. strict=True (tests)
    raises the first LessonFormatError.
    """
    files = _content_files() if directory is None else _dir_files(Path(directory))
    lessons: list[Lesson] = []
    problems: list[str] = []
    seen: dict[str, str] = {}
    for name, text in files:
        try:
            lesson = parse_lesson(text, name)
            if lesson.id in seen:
                raise LessonFormatError(name, f"id '{lesson.id}' is also used by {seen[lesson.id]}")
            lesson.links()  # malformed links are format errors
        except LessonFormatError as exc:
            if strict:
                raise
            problems.append(str(exc))
            continue
        seen[lesson.id] = name
        lessons.append(lesson)
    return Catalog(lessons, problems)


_default: Catalog | None = None


def default_catalog() -> Catalog:
    """The package's catalog, loaded once per process (the files do not change under us)."""
    global _default
    if _default is None:
        _default = load_catalog()
    return _default
