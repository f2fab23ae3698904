"""Typed, validated experiment parameters.

Every value a person types (CLI `--set`, the TUI form, a lesson link) goes through `Param.parse`,
so a bad value is refused in one place with one message that names the parameter, the value and
what is allowed.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

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
_NUMBER = re.compile(
    r"^\s*([+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:e[+-]?\d+)?)\s*(ki|mi|gi|ti|k|m|g|b|t)?\s*$",
    re.IGNORECASE,
)


class ParamError(ValueError):
    """A parameter value that cannot be accepted; str() is the one-line message to show."""

    def __init__(self, name: str, value: Any, allowed: str) -> None:
        self.name = name
        self.value = value
        self.allowed = allowed
        super().__init__(f"parameter '{name}': {value!r} is not allowed; expected {allowed}")


class UnknownParam(ParamError):
    def __init__(self, name: str, known: Iterable[str]) -> None:
        known_list = ", ".join(known) or "none"
        self.name = name
        self.value = name
        self.allowed = known_list
        ValueError.__init__(
            self, f"unknown parameter '{name}'; this experiment takes: {known_list}"
        )


def parse_number(text: str | int | float) -> float:
    """Parse a human number: 4096, 1e8, 100M, 2.5k, 1Gi. Raises ValueError."""
    if isinstance(text, bool):
        raise ValueError(f"not a number: {text!r}")
    if isinstance(text, int | float):
        return float(text)
    match = _NUMBER.match(str(text).replace("_", "").replace(",", ""))
    if not match:
        raise ValueError(f"not a number: {text!r}")
    mantissa, suffix = match.group(1), (match.group(2) or "").lower()
    return float(mantissa) * _SUFFIXES[suffix]


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

    def allowed(self) -> str:
        if self.kind == "bool":
            return "true or false"
        if self.kind == "choice":
            return "one of " + ", ".join(self.choices)
        if self.kind == "str":
            return "text"
        if self.kind == "list":
            inner = Param(
                self.name, self.item, None, min=self.min, max=self.max, choices=self.choices
            )
            return "a comma-separated list of " + inner.allowed()
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
        return self._parse_scalar(self.kind, raw, raw)

    def _parse_list(self, raw: Any) -> list[Any]:
        if isinstance(raw, str):
            parts = [p for p in re.split(r"[,\s]+", raw.strip()) if p]
        elif isinstance(raw, Sequence):
            parts = list(raw)
        else:
            raise ParamError(self.name, raw, self.allowed())
        if not parts:
            raise ParamError(self.name, raw, self.allowed() + " (at least one)")
        values = [self._parse_scalar(self.item, p, raw) for p in parts]
        seen: list[Any] = []
        for v in values:
            if v not in seen:
                seen.append(v)
        return seen

    def _parse_scalar(self, kind: str, raw: Any, shown: Any) -> Any:
        if kind == "bool":
            if isinstance(raw, bool):
                return raw
            text = str(raw).strip().lower()
            if text in ("1", "true", "yes", "on", "y"):
                return True
            if text in ("0", "false", "no", "off", "n"):
                return False
            raise ParamError(self.name, shown, self.allowed())
        if kind == "choice":
            text = str(raw).strip()
            for choice in self.choices:
                if text.lower() == choice.lower():
                    return choice
            raise ParamError(self.name, shown, self.allowed())
        if kind == "str":
            if raw is None or str(raw).strip() == "":
                raise ParamError(self.name, shown, "non-empty text")
            return str(raw).strip()
        try:
            number = parse_number(raw)
        except ValueError:
            raise ParamError(self.name, shown, self.allowed()) from None
        if not math.isfinite(number):
            raise ParamError(self.name, shown, self.allowed())
        if kind == "int":
            if number != int(number):
                raise ParamError(self.name, shown, self.allowed())
            number = int(number)
        if (self.min is not None and number < self.min) or (
            self.max is not None and number > self.max
        ):
            raise ParamError(self.name, shown, self.allowed())
        return number

    def to_dict(self) -> dict[str, Any]:
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
    return Param(name, "int", default, help, **kw)


def Float(name: str, default: float, help: str = "", **kw: Any) -> Param:  # noqa: N802
    return Param(name, "float", default, help, **kw)


def Choice(name: str, default: str, choices: Sequence[str], help: str = "", **kw: Any) -> Param:  # noqa: N802
    return Param(name, "choice", default, help, choices=tuple(choices), **kw)


def Bool(name: str, default: bool, help: str = "", **kw: Any) -> Param:  # noqa: N802
    return Param(name, "bool", default, help, **kw)


def Text(name: str, default: str, help: str = "", **kw: Any) -> Param:  # noqa: N802
    return Param(name, "str", default, help, **kw)


def List(name: str, default: Sequence[Any], item: str = "int", help: str = "", **kw: Any) -> Param:  # noqa: N802
    return Param(name, "list", list(default), help, item=item, **kw)


@dataclass(frozen=True)
class ParamSet:
    params: tuple[Param, ...] = field(default_factory=tuple)

    def __iter__(self):
        return iter(self.params)

    def __len__(self) -> int:
        return len(self.params)

    def names(self) -> list[str]:
        return [p.name for p in self.params]

    def get(self, name: str) -> Param:
        for p in self.params:
            if p.name == name:
                return p
        raise UnknownParam(name, self.names())

    def defaults(self) -> dict[str, Any]:
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
