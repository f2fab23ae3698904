"""An exercise's arithmetic intensity: the FLOPs and bytes its graded figure counts.

Declared in `exercise.md` as `intensity: {flops: F, bytes: B, counted: "what is counted"}`, per
element of the output unless `counted` says otherwise. The bytes are the ones the check's timing
counts for the figure (its TimingSpec's `work` and `note`), the FLOPs the arithmetic the
statement asks for; only the ratio F / B places the figure on the roofline (gpulab.explain).
Every exercise graded by speed declares one (tests/exercises/test_exercises_catalog.py).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

_FIELDS = ("flops", "bytes", "counted")


@dataclass(frozen=True)
class Intensity:
    """FLOPs and bytes of one unit of the graded work, and what they count."""

    flops: float
    bytes: float
    counted: str

    @property
    def per_byte(self) -> float:
        """FLOP per byte of memory traffic."""
        return self.flops / self.bytes if self.bytes else math.inf

    def to_dict(self) -> dict[str, Any]:
        """The intensity as JSON-ready data."""
        return {
            "flops": self.flops,
            "bytes": self.bytes,
            "counted": self.counted,
            "flop_per_byte": self.per_byte,
        }


def intensity_from(raw: Any, graded: bool, fail: Callable[[str], Exception]) -> Intensity | None:
    """The `intensity:` of an exercise.md, checked; `fail(problem)` makes the error to raise."""
    if raw is None:
        return None
    if not graded:
        raise fail("intensity: only an exercise graded by speed (GB/s or TFLOP/s) has one")
    if not isinstance(raw, Mapping) or sorted(raw) != sorted(_FIELDS):
        raise fail('intensity must be {flops: F, bytes: B, counted: "what is counted"}')
    flops, nbytes, counted = raw["flops"], raw["bytes"], raw["counted"]
    for key, value in (("flops", flops), ("bytes", nbytes)):
        if not isinstance(value, int | float) or isinstance(value, bool) or value < 0:
            raise fail(f"intensity.{key} {value!r} must be a number, 0 or more")
    if not nbytes:
        raise fail("intensity.bytes must be above 0: a figure moves some memory")
    if not isinstance(counted, str) or not counted.strip():
        raise fail("intensity.counted must say what the FLOPs and bytes count")
    return Intensity(float(flops), float(nbytes), counted.strip())
