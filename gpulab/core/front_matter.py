"""YAML front matter between `---` lines, read one way for lesson files and exercise statements.

Both formats open with the same block, and a learner-facing message about a broken one should
read the same whichever file it is in; each catalog raises its own subclass of `FormatError`
(the tests and the CLI tell lesson problems from exercise problems by type) and checks the keys
itself. Headless and light: PyYAML only.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from gpulab.core.errors import BadInput

# The C loader is several times faster (the app parses every lesson at start-up); PyYAML built
# without libyaml lacks it.
_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

# A '---' line, the YAML, a '---' line; Windows line ends are accepted (an editor's choice).
_FRONT = re.compile(r"\A---[ \t]*\r?\n(.*?)^---[ \t]*\r?$\n?", re.S | re.M)


class FormatError(BadInput, ValueError):
    """A file that does not follow its format; str() names the file and the problem."""

    def __init__(self, source: str | Path, problem: str) -> None:
        self.source = str(source)
        self.problem = problem
        super().__init__(f"{source}: {problem}")


@dataclass(frozen=True)
class FrontMatter:
    """A Markdown file split at its YAML front matter: the metadata, the body and the body's
    first line."""

    meta: Mapping[str, Any]
    body: str  # everything after the closing '---' line, as written
    body_line: int  # 1-based line of the file where the body starts


def read_front_matter(
    text: str, source: str | Path, error: type[FormatError] = FormatError
) -> FrontMatter:
    """Split `text` into its front matter (a mapping) and body; `error(source, problem)` when
    the block is missing, is not YAML, or is not a mapping."""
    text = text.lstrip("\ufeff")
    match = _FRONT.match(text)
    if not match:
        raise error(source, "no front matter: the file must start with a '---' line")
    try:
        meta = yaml.load(match.group(1), Loader=_Loader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f" (line {mark.line + 2})" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise error(source, f"front matter is not valid YAML{line}: {problem}") from None
    if not isinstance(meta, Mapping):
        raise error(source, "front matter must be a mapping of keys to values")
    body_line = text[: match.end()].count("\n") + 1
    return FrontMatter(meta, text[match.end() :], body_line)
