"""What a lesson body holds besides Markdown: experiment and exercise links, code blocks, and
`{{measured:KEY}}` placeholders, each found outside code (a link inside a code block is an
example, not a link).

Separate from the catalog because it works on body text alone: the lesson browser, the link
checker and the measured-value fallbacks call it without a loaded lesson. Headless.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from urllib.parse import unquote

from gpulab.core.params import ParamError
from gpulab.experiments.registry import UnknownExperiment, get
from gpulab.lessons.lesson_format import LessonFormatError
from gpulab.lessons.measured import KEYS

_LINK = re.compile(r"\[([^\]]*)\]\(\s*<?(experiment:[^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
_AUTOLINK = re.compile(r"<(experiment:[^>\s]+)>")
# `[Practise: vector addition](exercise:vector-add)`: opens the exercise in the lab.
_EXERCISE_LINK = re.compile(r"\[([^\]]*)\]\(\s*<?exercise:([^)\s>]*)>?\s*\)")
_FENCE_OPEN = re.compile(r"^( {0,3})(`{3,}|~{3,})(.*)$")
_HEADING = re.compile(r"^ {0,3}#{1,6}[ \t]+(.+?)[ \t#]*$", re.M)
_CODE_SPAN = re.compile(r"(`+)(?!`).+?(?<!`)\1(?!`)", re.S)
MEASURED = re.compile(r"\{\{\s*measured:([A-Za-z0-9_]+)\s*\}\}")


@dataclass(frozen=True)
class ExperimentLink:
    """A `[text](experiment:ID?k=v&k2=v2)` link; params stay strings, parsed like `--set`."""

    text: str
    href: str
    experiment: str
    params: dict[str, str]


@dataclass(frozen=True)
class ExerciseLink:
    """A `[text](exercise:ID)` link: the exercise to practise what the lesson taught."""

    text: str
    exercise: str


@dataclass(frozen=True)
class CodeBlock:
    """A fenced code block: its info string, code and the opening fence's line."""

    info: str  # the whole info string, e.g. "python runnable gpu"
    code: str
    line: int  # 1-based line of the opening fence in the file

    @property
    def language(self) -> str:
        """The block's language, lower-case."""
        return self.info.split()[0].lower() if self.info.split() else ""

    @property
    def flags(self) -> tuple[str, ...]:
        """The info string's words after the language (runnable, gpu, ...)."""
        return tuple(w.lower() for w in self.info.split()[1:])

    @property
    def runnable(self) -> bool:
        """True for a Python block marked runnable."""
        return self.language == "python" and "runnable" in self.flags

    @property
    def gpu(self) -> bool:
        """True for a runnable block that needs a GPU."""
        return self.runnable and "gpu" in self.flags


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


def extract_exercise_links(body: str, source: str = "<lesson>") -> list[ExerciseLink]:
    """Every `exercise:ID` link outside code blocks; one without an id raises."""
    links = []
    for m in _EXERCISE_LINK.finditer(_without_code(body)):
        ex_id = unquote(m.group(2)).strip().strip("/")
        if not ex_id:
            raise LessonFormatError(source, f"exercise link without an id: {m.group(0)!r}")
        links.append(ExerciseLink(" ".join(m.group(1).split()) or ex_id, ex_id))
    return links


def validate_link(link: ExperimentLink) -> str | None:
    """None when the link names a registered experiment with acceptable params, else why not."""
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
    """The fenced code blocks of `body`, lines counted from `first_line`."""
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
    code: set[int] = set()
    for start, end, _, _ in _fences(body):
        code.update(range(start, end + 1))
    return "\n".join(line if i in code else replace(line) for i, line in enumerate(lines))


def headings(body: str) -> list[str]:
    """The body's `#` headings, outside code blocks."""
    return [m.group(1).strip() for m in _HEADING.finditer(_without_code(body))]
