"""The `schema` tag every JSON document the CLI writes carries, in one place.

A document's tag is `gpulab.<kind>/<version>`, e.g. `gpulab.info/1`. A version moves when that
document's shape changes in a way a reader could trip on (a field removed, renamed or retyped;
new fields are not a change), and with it the package version (CHANGELOG.md says which moved).
Readers should check the kind and the version they know, and refuse a newer one.
"""

from __future__ import annotations

from typing import Any

# kind -> version. `event`: one line of `gpulab run --json` and `gpulab ex watch --json`;
# `prediction`: the last line of `gpulab run --predict --json`.
VERSIONS: dict[str, int] = {
    "info": 1,
    "list": 1,
    "event": 1,
    "bench": 1,
    "lessons": 1,
    "exercises": 1,
    "history": 1,
    "doctor": 1,
    "store": 1,
    "prediction": 1,
    "predictions": 1,
}
KEY = "schema"


def tag(kind: str) -> str:
    """The tag of one kind of document; an unknown kind is a programming error."""
    return f"gpulab.{kind}/{VERSIONS[kind]}"


def tagged(kind: str, data: dict[str, Any]) -> dict[str, Any]:
    """`data` with its schema tag first (a new dict; the caller's is left as it was)."""
    return {KEY: tag(kind), **{k: v for k, v in data.items() if k != KEY}}
