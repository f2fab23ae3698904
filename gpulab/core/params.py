"""Typed, validated experiment parameters.

Every value a person types (CLI `--set`, the TUI form, a lesson link) goes through `Param.parse`,
so a bad value is refused in one place with one message that names the parameter, the value and
what is allowed. Numbers are ASCII only: Python's int() and float() take full-width and other
Unicode digits, which nobody types on purpose and no other tool reads back the same way.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from gpulab.core.errors import BadInput

_SUFFIXES = {
    "": 1,
    "k": 10**3,
    "m": 10**6,
    "g": 10**9,
    "b": 10**9,  # "1B samples" reads naturally to learners
    "t": 10**12,
    "ki": 2**10,
    "mi": 2**20,
    "gi": 2**30,
    "ti": 2**40,
}
# re.ASCII: without it \d and \s match any script's digits and spaces (and IGNORECASE folds
# the Kelvin sign into "k").
_NUMBER = re.compile(
    r"^\s*([+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:e[+-]?\d+)?)\s*(ki|mi|gi|ti|k|m|g|b|t)?\s*$",
    re.IGNORECASE | re.ASCII,
)
_PLAIN_NUMBER = re.compile(r"^\s*[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:e[+-]?\d+)?\s*$", re.I | re.A)
_ASCII_SPACES = re.compile(r"[ \t\r\n\f\v]+")
SHOWN_CHARS = 80  # a value longer than this is cut in messages, which stay one readable line


def shown(value: Any) -> str:
    """repr() of a value for a one-line message, cut to SHOWN_CHARS."""
    text = repr(value)
    if len(text) <= SHOWN_CHARS:
        return text
    quote = text[-1] if text[-1] in "'\"" else ""
    return text[: SHOWN_CHARS - 4] + "..." + quote


# The largest seed a check or a profile takes: seeds travel as JSON numbers and job params, and
# a learner types them back (`--seed`), so they stay exact everywhere.
SEED_MAX = 2**32 - 1


class ParamError(BadInput, ValueError):
    """A parameter value that cannot be accepted; str() is the one-line message to show."""

    def __init__(
        self, name: str, value: Any, allowed: str, problem: str = "is not allowed"
    ) -> None:
        self.name = name
        self.value = value
        self.allowed = allowed
        self.problem = problem
        super().__init__(f"parameter '{name}': {shown(value)} {problem}; expected {allowed}")


class _Bad(Exception):
    """Inside Param: what is wrong with one value, before it is known whether it is an item."""

    def __init__(self, problem: str = "is not allowed") -> None:
        super().__init__(problem)
        self.problem = problem


class UnknownParam(ParamError):
    """A parameter name the experiment does not have; its message lists the known ones."""

    def __init__(self, name: str, known: Iterable[str]) -> None:
        known_list = ", ".join(known) or "none"
        self.name = name
        self.value = name
        self.allowed = known_list
        ValueError.__init__(
            self, f"unknown parameter '{name}'; this experiment takes: {known_list}"
        )


def parse_number(text: str | int | float) -> float:
    """Parse a human number: 4096, 1e8, 100M, 2.5k, 1Gi. Raises ValueError (ASCII only)."""
    if isinstance(text, bool):
        raise ValueError(f"not a number: {text!r}")
    if isinstance(text, int | float):
        try:
            return float(text)
        except OverflowError:  # an int past float's range
            return math.inf if text > 0 else -math.inf
    text = str(text)
    if not text.isascii():
        raise ValueError(f"not a number: {text!r} (use ASCII digits 0-9)")
    match = _NUMBER.match(text.replace("_", "").replace(",", ""))
    if not match:
        raise ValueError(f"not a number: {text!r}")
    mantissa, suffix = match.group(1), (match.group(2) or "").lower()
    return float(mantissa) * _SUFFIXES[suffix]


def parse_plain_number(text: str) -> float:
    """A plain ASCII decimal (12, 0.5, 1e3): no suffixes, no separators, finite. For flags
    whose unit is not a count (seconds), where "10m" must not read as ten million."""
    if not isinstance(text, str) or not text.isascii() or not _PLAIN_NUMBER.match(text):
        raise ValueError(f"not a number: {text!r}")
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"not a finite number: {text!r}")
    return value


def parse_index(text: str, digits: int = 4) -> int:
    """A GPU index (or any small count) as a person types it: ASCII digits only, so no sign, no
    point and no other script's digits; at most `digits` of them. Raises ValueError."""
    body = text.strip() if isinstance(text, str) else ""
    if not (body.isascii() and body.isdigit() and len(body) <= digits):
        raise ValueError(f"not an index: {text!r}")
    return int(body)


def format_number(value: float) -> str:
    """Short human form for defaults and bounds in help text: 10000000 -> '10M'."""
    if value == 0 or not math.isfinite(value):
        return str(value)
    for suffix, factor in (("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(value) >= factor and (value / factor) == int(value / factor):
            return f"{int(value / factor)}{suffix}"
    if value == int(value):
        return str(int(value))
    return f"{value:g}"


@dataclass(frozen=True)
class Param:
    """One parameter. `kind` is int, float, choice, bool, str or list."""

    name: str
    kind: str
    default: Any
    help: str = ""
    unit: str = ""
    min: float | None = None
    max: float | None = None
    choices: tuple[str, ...] = ()
    item: str = "int"  # element kind of a list: int, float or choice
    # A last check of a parsed value (a file that must exist, say): None when it is fine, else
    # the problem, which follows the value in the message ("does not exist").
    check: Callable[[Any], str | None] | None = field(default=None, compare=False, repr=False)
    expects: str = ""  # what allowed() says, where the kind alone says too little ("text")

    def allowed(self, plural: bool = False) -> str:
        """What values this parameter accepts, as a person reads it in an error message."""
        if self.expects:
            return self.expects
        if self.kind == "bool":
            return "true or false"
        if self.kind == "choice":
            return ("" if plural else "one of ") + ", ".join(self.choices)
        if self.kind == "str":
            return "text"
        if self.kind == "list":
            inner = Param(
                self.name, self.item, None, min=self.min, max=self.max, choices=self.choices
            )
            joiner = "from " if self.item == "choice" else "of "
            return "a comma-separated list " + joiner + inner.allowed(plural=True)
        if plural:
            what = "whole numbers" if self.kind == "int" else "numbers"
        else:
            what = "a whole number" if self.kind == "int" else "a number"
        lo = format_number(self.min) if self.min is not None else None
        hi = format_number(self.max) if self.max is not None else None
        unit = f" {self.unit}" if self.unit else ""
        if lo is not None and hi is not None:
            return f"{what} from {lo} to {hi}{unit}"
        if lo is not None:
            return f"{what} >= {lo}{unit}"
        if hi is not None:
            return f"{what} <= {hi}{unit}"
        return what

    def parse(self, raw: Any) -> Any:
        """Turn raw input (text or a Python value) into a valid value, or raise ParamError."""
        if self.kind == "list":
            return self._parse_list(raw)
        try:
            value = self._parse_scalar(self.kind, raw)
        except _Bad as bad:
            raise ParamError(self.name, raw, self._allowed_for(self.kind), bad.problem) from None
        if self.check is not None:
            problem = self.check(value)
            if problem:
                raise ParamError(self.name, raw, self.allowed(), problem)
        return value

    def _allowed_for(self, kind: str) -> str:
        return "non-empty text" if kind == "str" and not self.expects else self.allowed()

    def _parse_list(self, raw: Any) -> list[Any]:
        if isinstance(raw, str):
            # Commas separate items (spaces too, for "256 512"); an empty item between two
            # commas is a typo to point at, not something to drop silently.
            parts: list[Any] = []
            pieces = raw.split(",")
            for i, piece in enumerate(pieces):
                words = _ASCII_SPACES.split(piece.strip(" \t\r\n\f\v")) if piece else []
                words = [w for w in words if w]
                if not words and raw.strip():
                    where = (
                        "ends with a comma"
                        if i == len(pieces) - 1
                        else f"is not allowed: item {len(parts) + 1} is empty"
                    )
                    raise ParamError(self.name, raw, self.allowed(), where)
                parts.extend(words)
        elif isinstance(raw, Sequence):
            parts = list(raw)
        else:
            raise ParamError(self.name, raw, self.allowed())
        if not parts:
            raise ParamError(self.name, raw, self.allowed() + " (at least one)", "is empty")
        values: list[Any] = []
        bad: list[str] = []
        for i, part in enumerate(parts, 1):
            try:
                values.append(self._parse_scalar(self.item, part))
            except _Bad as exc:
                bad.append(f"item {i} ({shown(part)}) {exc.problem}")
        if bad:
            more = f" (and {len(bad) - 3} more)" if len(bad) > 3 else ""
            problem = "is not allowed: " + ", ".join(bad[:3]) + more
            raise ParamError(self.name, raw, self.allowed(), problem)
        seen: list[Any] = []
        for v in values:
            if v not in seen:
                seen.append(v)
        return seen

    def _parse_scalar(self, kind: str, raw: Any) -> Any:
        """One value of `kind`, or _Bad saying what is wrong with it."""
        if kind == "bool":
            if isinstance(raw, bool):
                return raw
            text = str(raw).strip().lower()
            if text in ("1", "true", "yes", "on", "y"):
                return True
            if text in ("0", "false", "no", "off", "n"):
                return False
            raise _Bad()
        if kind == "choice":
            text = str(raw).strip()
            if str(raw).isascii():  # "\u212a".lower() == "k": no look-alike reaches a choice
                for choice in self.choices:
                    if text.lower() == choice.lower():
                        return choice
            raise _Bad()
        if kind == "str":
            if raw is None or str(raw).strip() == "":
                raise _Bad("is empty")
            text = str(raw).strip()
            if any(ord(ch) < 32 or ord(ch) == 127 for ch in text):
                raise _Bad("contains a control character")
            return text
        if isinstance(raw, str) and raw.strip() == "":
            raise _Bad("is empty")
        if isinstance(raw, str) and not raw.isascii():
            raise _Bad("is not plain ASCII (type the digits 0-9)")
        try:
            number = parse_number(raw)
        except ValueError:
            raise _Bad("is not a number") from None
        if math.isnan(number):  # a Python nan; the text "nan" never parses
            raise _Bad("is not a number")
        if math.isinf(number):  # float('inf'), or digits past float's range
            raise _Bad("is out of range")
        if kind == "int":
            if number != int(number):
                raise _Bad("is not a whole number")
            number = int(number)
        if (self.min is not None and number < self.min) or (
            self.max is not None and number > self.max
        ):
            raise _Bad("is out of range")
        return number

    def to_dict(self) -> dict[str, Any]:
        """The parameter's declaration as JSON-ready data (for `gpulab list --json` and the UI's
        form)."""
        return {
            "name": self.name,
            "kind": self.kind,
            "default": self.default,
            "help": self.help,
            "unit": self.unit,
            "min": self.min,
            "max": self.max,
            "choices": list(self.choices),
            "item": self.item if self.kind == "list" else None,
            "allowed": self.allowed(),
        }


def Int(name: str, default: int, help: str = "", **kw: Any) -> Param:  # noqa: N802
    """An integer parameter."""
    return Param(name, "int", default, help, **kw)


def Float(name: str, default: float, help: str = "", **kw: Any) -> Param:  # noqa: N802
    """A floating-point parameter."""
    return Param(name, "float", default, help, **kw)


def Choice(name: str, default: str, choices: Sequence[str], help: str = "", **kw: Any) -> Param:  # noqa: N802
    """A parameter that takes one of `choices`."""
    return Param(name, "choice", default, help, choices=tuple(choices), **kw)


def Bool(name: str, default: bool, help: str = "", **kw: Any) -> Param:  # noqa: N802
    """A true/false parameter."""
    return Param(name, "bool", default, help, **kw)


def Text(name: str, default: str, help: str = "", **kw: Any) -> Param:  # noqa: N802
    """A free-text parameter."""
    return Param(name, "str", default, help, **kw)


def List(name: str, default: Sequence[Any], item: str = "int", help: str = "", **kw: Any) -> Param:  # noqa: N802
    """A list parameter whose items are of kind `item`."""
    return Param(name, "list", list(default), help, item=item, **kw)


@dataclass(frozen=True)
class ParamSet:
    """An experiment's parameters, in declaration order."""

    params: tuple[Param, ...] = field(default_factory=tuple)

    def __iter__(self):
        return iter(self.params)

    def __len__(self) -> int:
        return len(self.params)

    def names(self) -> list[str]:
        """The parameter names, in order."""
        return [p.name for p in self.params]

    def get(self, name: str) -> Param:
        """The parameter `name`; UnknownParam when there is none."""
        for p in self.params:
            if p.name == name:
                return p
        raise UnknownParam(name, self.names())

    def defaults(self) -> dict[str, Any]:
        """Each parameter's default value, by name."""
        return {p.name: p.default for p in self.params}

    def validate(self, raw: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """Defaults overlaid with `raw`, every value parsed; raises ParamError on the first bad one."""
        raw = dict(raw or {})
        for name in raw:
            self.get(name)
        return {p.name: p.parse(raw[p.name]) if p.name in raw else p.default for p in self.params}


def parse_assignments(items: Iterable[str]) -> dict[str, str]:
    """`["samples=1e8", "kernel=box"]` -> dict; a malformed item raises ValueError."""
    out: dict[str, str] = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name.strip():
            raise ValueError(f"--set expects NAME=VALUE, got {item!r}")
        out[name.strip()] = value.strip()
    return out
