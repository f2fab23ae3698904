"""The lesson catalog: content/*.md parsed, validated and ordered. Headless (no textual, no torch).

A lesson file is YAML front matter between `---` lines, then a Markdown body (the format is in
the team's lesson-format.md and in the module docstring of each content file's neighbours).
Loading is strict about the front matter because a typo there (a quiz answer out of range, a
chapter of 18) is a wrong lesson, not a cosmetic problem; every error names the file.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import yaml

try:  # the C loader is several times faster; the app parses every lesson at start-up
    from yaml import CSafeLoader as _Loader
except ImportError:  # pragma: no cover - depends on how PyYAML was built
    from yaml import SafeLoader as _Loader  # type: ignore[assignment]

CHAPTERS: dict[int, str] = {
    1: "Why GPUs",
    2: "Inside the GPU",
    3: "The CUDA programming model",
    4: "Checking your setup",
    5: "CuPy, NumPy for GPUs",
    6: "PyTorch on the GPU",
    7: "Timing GPU code honestly",
    8: "Parallel patterns",
    9: "Memory management",
    10: "Transfers",
    11: "Data types and tensor cores",
    12: "Performance regimes",
    13: "Mixed precision training",
    14: "Profiling",
    15: "Many GPUs",
    16: "Debugging",
    17: "Applications",
}

# The first lesson of each chapter, by fixed id (other engineers and tests rely on these).
CHAPTER_LESSON_IDS: tuple[str, ...] = (
    "why-gpus",
    "inside-the-gpu",
    "cuda-programming-model",
    "checking-your-setup",
    "cupy-numpy-for-gpus",
    "pytorch-on-the-gpu",
    "timing-honestly",
    "parallel-patterns",
    "memory-management",
    "transfers",
    "dtypes-and-tensor-cores",
    "performance-regimes",
    "mixed-precision",
    "profiling",
    "many-gpus",
    "debugging",
    "applications",
)

_KEYS = ("id", "chapter", "order", "title", "objectives", "experiments", "quiz")
_QUESTION_KEYS = ("q", "choices", "answer", "explain")
_ID = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
_FRONT = re.compile(r"\A---[ \t]*\r?\n(.*?)^---[ \t]*\r?$\n?", re.S | re.M)
_LINK = re.compile(r"\[([^\]]*)\]\(\s*<?(experiment:[^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
_AUTOLINK = re.compile(r"<(experiment:[^>\s]+)>")
_FENCE_OPEN = re.compile(r"^( {0,3})(`{3,}|~{3,})(.*)$")
_HEADING = re.compile(r"^ {0,3}#{1,6}[ \t]+(.+?)[ \t#]*$", re.M)
_CODE_SPAN = re.compile(r"(`+)(?!`).+?(?<!`)\1(?!`)", re.S)
MEASURED = re.compile(r"\{\{\s*measured:([A-Za-z0-9_]+)\s*\}\}")


class LessonFormatError(ValueError):
    """A lesson file that does not follow the format; str() names the file and the problem."""

    def __init__(self, source: str, problem: str) -> None:
        self.source = source
        self.problem = problem
        super().__init__(f"{source}: {problem}")


@dataclass(frozen=True)
class Question:
    q: str
    choices: tuple[str, ...]
    answer: int
    explain: str

    def is_correct(self, choice: int) -> bool:
        return choice == self.answer

    def to_dict(self) -> dict[str, Any]:
        return {
            "q": self.q,
            "choices": list(self.choices),
            "answer": self.answer,
            "explain": self.explain,
        }


@dataclass(frozen=True)
class ExperimentLink:
    """A `[text](experiment:ID?k=v&k2=v2)` link; params stay strings, parsed like `--set`."""

    text: str
    href: str
    experiment: str
    params: dict[str, str]


@dataclass(frozen=True)
class CodeBlock:
    info: str  # the whole info string, e.g. "python runnable gpu"
    code: str
    line: int  # 1-based line of the opening fence in the file

    @property
    def language(self) -> str:
        return self.info.split()[0].lower() if self.info.split() else ""

    @property
    def flags(self) -> tuple[str, ...]:
        return tuple(w.lower() for w in self.info.split()[1:])

    @property
    def runnable(self) -> bool:
        return self.language == "python" and "runnable" in self.flags

    @property
    def gpu(self) -> bool:
        return self.runnable and "gpu" in self.flags


@dataclass(frozen=True)
class Lesson:
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
        return CHAPTERS.get(self.chapter, f"Chapter {self.chapter}")

    def links(self) -> list[ExperimentLink]:
        return extract_links(self.body, self.source)

    def code_blocks(self) -> list[CodeBlock]:
        return extract_code_blocks(self.body, self.body_line)

    def matches(self, text: str) -> bool:
        """Case-insensitive match of every word of `text` in the title, objectives or body."""
        return self.match_rank(text) is not None

    def headings(self) -> list[str]:
        """The body's `#` headings, outside code blocks."""
        return [m.group(1).strip() for m in _HEADING.finditer(_without_code(self.body))]

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
        return MEASURED.findall(self.body)

    def display_markdown(self, measured: Callable[[str], str] | None = None) -> str:
        """The body as the browser shows it: measured values filled in, fences made plain."""
        body = substitute_measured(self.body, measured) if measured else self.body
        return plain_fences(body)


@dataclass(frozen=True)
class Chapter:
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
        try:
            return self._by_id[lesson_id]
        except KeyError:
            known = ", ".join(self._by_id) or "none loaded"
            raise KeyError(f"unknown lesson '{lesson_id}'; known: {known}") from None

    def chapters(self, lessons: Iterable[Lesson] | None = None) -> list[Chapter]:
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
        return self._step(lesson_id, +1)

    def previous(self, lesson_id: str) -> Lesson | None:
        return self._step(lesson_id, -1)

    def filter(self, text: str) -> list[Lesson]:
        """Lessons matching `text`: title and heading matches first, then objectives, then the
        body; reading order within each."""
        ranked = [(le.match_rank(text), i, le) for i, le in enumerate(self.lessons)]
        return [le for rank, _, le in sorted(r for r in ranked if r[0] is not None)]

    def questions(self) -> int:
        return sum(len(le.quiz) for le in self.lessons)


# --- parsing -------------------------------------------------------------------------------


def parse_lesson(text: str, source: str) -> Lesson:
    """One lesson from its file text; raises LessonFormatError naming `source`."""
    text = text.lstrip("\ufeff")
    match = _FRONT.match(text)
    if not match:
        raise LessonFormatError(source, "no front matter: the file must start with a '---' line")
    try:
        meta = yaml.load(match.group(1), Loader=_Loader)
    except yaml.YAMLError as exc:
        where = getattr(exc, "problem_mark", None)
        line = f" (line {where.line + 2})" if where is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise LessonFormatError(
            source, f"front matter is not valid YAML{line}: {problem}"
        ) from None
    if not isinstance(meta, Mapping):
        raise LessonFormatError(source, "front matter must be a mapping of keys to values")
    fields = _validate(meta, source)
    body = text[match.end() :]
    if not body.strip():
        raise LessonFormatError(source, "the lesson has no body after the front matter")
    body_line = text[: match.end()].count("\n") + 1
    return Lesson(**fields, body=body, source=source, body_line=body_line)


def _validate(meta: Mapping[str, Any], source: str) -> dict[str, Any]:
    def fail(problem: str) -> LessonFormatError:
        return LessonFormatError(source, problem)

    unknown = [k for k in meta if k not in _KEYS]
    if unknown:
        raise fail(f"unknown key(s) {', '.join(map(str, unknown))}; allowed: {', '.join(_KEYS)}")
    missing = [k for k in _KEYS if k not in meta]
    if missing:
        raise fail(f"missing key(s): {', '.join(missing)}")

    lesson_id = meta["id"]
    if not isinstance(lesson_id, str) or not _ID.match(lesson_id):
        raise fail(f"id {lesson_id!r} must be lower-case words joined by '-'")
    chapter = meta["chapter"]
    if not _is_int(chapter) or chapter not in CHAPTERS:
        raise fail(f"chapter {chapter!r} must be a whole number from 1 to {len(CHAPTERS)}")
    order = meta["order"]
    if not _is_int(order) or order < 0:
        raise fail(f"order {order!r} must be a whole number >= 0")
    title = meta["title"]
    if not _nonempty_str(title):
        raise fail("title must be non-empty text")
    objectives = _str_list(meta["objectives"], "objectives", fail)
    if not objectives:
        raise fail("objectives must list at least one objective")
    experiments = _str_list(meta["experiments"], "experiments", fail)
    for exp_id in experiments:
        if not _ID.match(exp_id):
            raise fail(f"experiments: {exp_id!r} is not an experiment id")
    quiz = meta["quiz"]
    if not isinstance(quiz, list):
        raise fail("quiz must be a list of questions")
    questions = tuple(_question(item, i, fail) for i, item in enumerate(quiz, 1))
    return {
        "id": lesson_id,
        "chapter": chapter,
        "order": order,
        "title": title.strip(),
        "objectives": objectives,
        "experiments": experiments,
        "quiz": questions,
    }


def _question(item: Any, n: int, fail: Callable[[str], Exception]) -> Question:
    where = f"quiz question {n}"
    if not isinstance(item, Mapping):
        raise fail(f"{where} must be a mapping with keys {', '.join(_QUESTION_KEYS)}")
    unknown = [k for k in item if k not in _QUESTION_KEYS]
    if unknown:
        raise fail(f"{where}: unknown key(s) {', '.join(map(str, unknown))}")
    missing = [k for k in _QUESTION_KEYS if k not in item]
    if missing:
        raise fail(f"{where}: missing key(s) {', '.join(missing)}")
    if not _nonempty_str(item["q"]):
        raise fail(f"{where}: q must be non-empty text")
    choices = item["choices"]
    if not isinstance(choices, list) or len(choices) < 2:
        raise fail(f"{where}: choices must be a list of at least 2")
    # YAML turns `- 32` or `- yes` into numbers and booleans; a choice is shown as text anyway.
    if any(isinstance(c, Mapping | list) or c is None for c in choices):
        raise fail(f"{where}: every choice must be plain text")
    texts = tuple(str(c).strip() for c in choices)
    if any(not t for t in texts):
        raise fail(f"{where}: a choice is empty")
    if len({t.lower() for t in texts}) != len(texts):
        raise fail(f"{where}: two choices are the same")
    answer = item["answer"]
    if not _is_int(answer) or not 0 <= answer < len(texts):
        raise fail(
            f"{where}: answer {answer!r} must be the 0-based index of one choice "
            f"(0 to {len(texts) - 1})"
        )
    if not _nonempty_str(item["explain"]):
        raise fail(f"{where}: explain must be non-empty text")
    return Question(item["q"].strip(), texts, answer, item["explain"].strip())


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _nonempty_str(value: Any) -> bool:
    return isinstance(value, str) and bool(value.strip())


def _str_list(value: Any, key: str, fail: Callable[[str], Exception]) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list) or not all(_nonempty_str(v) for v in value):
        raise fail(f"{key} must be a list of non-empty text")
    return tuple(v.strip() for v in value)


# --- links, code, measured values ----------------------------------------------------------


def parse_experiment_href(href: str) -> tuple[str, dict[str, str]]:
    """`experiment:matmul?sizes=256,1024&dtypes=fp32` -> ("matmul", {"sizes": ..., ...}).

    Values stay strings and are percent-decoded but '+' is kept (it is not a space here:
    `1e+8` must survive). A malformed link raises ValueError.
    """
    scheme, sep, rest = href.strip().partition(":")
    if scheme != "experiment" or not sep:
        raise ValueError(f"not an experiment link: {href!r}")
    exp_id, _, query = rest.partition("?")
    exp_id = unquote(exp_id).strip().strip("/")
    if not exp_id:
        raise ValueError(f"experiment link without an experiment id: {href!r}")
    params: dict[str, str] = {}
    for part in query.split("&") if query else ():
        if not part:
            continue
        name, eq, value = part.partition("=")
        name = unquote(name).strip()
        if not eq or not name:
            raise ValueError(f"experiment link {href!r}: expected NAME=VALUE, got {part!r}")
        if name in params:
            raise ValueError(f"experiment link {href!r}: '{name}' given twice")
        params[name] = unquote(value).strip()
    return exp_id, params


def extract_links(body: str, source: str = "<lesson>") -> list[ExperimentLink]:
    """Every experiment link in the body, outside code blocks; malformed ones raise."""
    text = _without_code(body)
    found: list[tuple[int, str, str]] = [
        (m.start(), m.group(1), m.group(2)) for m in _LINK.finditer(text)
    ]
    found += [(m.start(), m.group(1), m.group(1)) for m in _AUTOLINK.finditer(text)]
    links = []
    for _, label, href in sorted(found):
        try:
            exp_id, params = parse_experiment_href(href)
        except ValueError as exc:
            raise LessonFormatError(source, str(exc)) from None
        links.append(ExperimentLink(" ".join(label.split()) or exp_id, href, exp_id, params))
    return links


def validate_link(link: ExperimentLink) -> str | None:
    """None when the link names a registered experiment with acceptable params, else why not."""
    from gpulab.core.params import ParamError
    from gpulab.experiments.registry import UnknownExperiment, get

    try:
        get(link.experiment).params.validate(link.params)
    except (UnknownExperiment, ParamError) as exc:
        return f"link {link.href!r}: {exc}"
    return None


def _fences(body: str) -> Iterator[tuple[int, int, str, str]]:
    """(first line index, last line index, info, code) of each fenced block."""
    lines = body.split("\n")
    i = 0
    while i < len(lines):
        m = _FENCE_OPEN.match(lines[i])
        if not m or (m.group(2)[0] == "`" and "`" in m.group(3)):
            i += 1
            continue
        indent, fence, info = len(m.group(1)), m.group(2), m.group(3).strip()
        close = re.compile(rf"^ {{0,3}}{re.escape(fence[0])}{{{len(fence)},}}\s*$")
        j = i + 1
        while j < len(lines) and not close.match(lines[j]):
            j += 1
        code_lines = [_dedent(line, indent) for line in lines[i + 1 : j]]
        yield i, min(j, len(lines) - 1), info, "\n".join(code_lines) + "\n"
        i = j + 1


def _dedent(line: str, indent: int) -> str:
    strip = len(line) - len(line.lstrip(" "))
    return line[min(strip, indent) :]


def extract_code_blocks(body: str, first_line: int = 1) -> list[CodeBlock]:
    return [CodeBlock(info, code, first_line + start) for start, _, info, code in _fences(body)]


def _without_code(body: str) -> str:
    """The body with fenced blocks blanked (links inside code are examples, not links)."""
    lines = body.split("\n")
    for start, end, _, _ in _fences(body):
        for k in range(start, end + 1):
            lines[k] = ""
    return _CODE_SPAN.sub(lambda m: " " * len(m.group(0)), "\n".join(lines))


def plain_fences(body: str) -> str:
    """Fence info strings reduced to the language, so the viewer's highlighter recognises it."""
    lines = body.split("\n")
    for start, _, info, _ in _fences(body):
        if info and len(info.split()) > 1:
            m = _FENCE_OPEN.match(lines[start])
            assert m is not None
            lines[start] = f"{m.group(1)}{m.group(2)}{info.split()[0]}"
    return "\n".join(lines)


def substitute_measured(
    body: str, lookup: Callable[[str], str], units: Mapping[str, str] | None = None
) -> str:
    """Replace each {{measured:KEY}} with lookup(KEY), outside code blocks.

    Writers put the unit after the placeholder ("{{measured:copy_gbs}} GB/s"). The value comes
    with its unit and swallows that written one, so a known figure reads "2,900 GB/s" and an
    unknown one reads "(not measured yet: run the calibrate experiment)" without a dangling
    "GB/s". A fallback repeated in the same lesson is shortened to its first clause.
    """
    if units is None:
        from gpulab.lessons.measured import KEYS

        units = {k: unit for k, (unit, _) in KEYS.items()}
    said: set[str] = set()

    def replace(text: str) -> str:
        out: list[str] = []
        pos = 0
        for m in MEASURED.finditer(text):
            key = m.group(1)
            value = lookup(key)
            if value.startswith("(") and ":" in value:
                if value in said:
                    value = value.split(":", 1)[0] + ")"
                else:
                    said.add(value)
            out.append(text[pos : m.start()])
            out.append(value)
            pos = m.end()
            unit = units.get(key, "")
            if unit and re.match(rf"[ \t]+{re.escape(unit)}(?![A-Za-z/])", text[pos:]):
                pos += len(text[pos:]) - len(text[pos:].lstrip(" \t")) + len(unit)
        out.append(text[pos:])
        return "".join(out)

    lines = body.split("\n")
    code = set()
    for start, end, _, _ in _fences(body):
        code.update(range(start, end + 1))
    return "\n".join(line if i in code else replace(line) for i, line in enumerate(lines))


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
