"""What an exercise's `exercise.md` front matter must hold: the keys, what each may be, and the
grades as rising fractions of the exercise's yardstick.

The grades are fractions of the speed of the exercise's yardstick, our own solution timed in the
same check on the same GPU (gpulab.exercises.yardstick: the expert solution where the folder has
one, else the reference). A fraction of what our code reaches on the learner's own GPU, now, is
the portable unit; a fraction of a calibrated ceiling is not (an expert reduction reached 0.96 of
the copy on an H100 and 0.62 on an H200). Gold asks for at least EXPERT_GOLD of the yardstick.

Separate from the catalog, which finds and loads exercise folders, because this is the format's
rulebook: every message a writer sees about a broken exercise header comes from here. Strict on
purpose (a grade out of order is a broken exercise); every error names the file.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from gpulab.core.front_matter import FormatError
from gpulab.exercises.intensity import intensity_from

# "triton": Triton importable; with a GPU it compiles, without one its interpreter runs the
# kernels (correctness only).
NEEDS = ("cpu", "gpu", "cupy", "triton")
SPEED_METRICS = ("GB/s", "TFLOP/s")  # an exercise with one of these is graded by speed
METRICS = (*SPEED_METRICS, "none")
GRADES = ("bronze", "silver", "gold")
DEFAULT_TIME_LIMIT_S = 60.0
EXPERT_GOLD = 0.85  # gold needs at least this share of the yardstick's speed
_KEYS = {
    "id",
    "title",
    "order",
    "lesson",
    "needs",
    "metric",
    "grades",
    "hints",
    "time_limit",
    "summary",
    "intensity",
}


class ExerciseFormatError(FormatError):
    """An exercise folder that does not follow the format; str() names the file and the problem."""


def validate_meta(meta: Mapping[str, Any], src: Path) -> dict[str, Any]:
    """The checked front matter of exercise.md at `src`; ExerciseFormatError names the first
    problem."""

    def fail(problem: str) -> ExerciseFormatError:
        return ExerciseFormatError(src, problem)

    unknown = sorted(str(k) for k in meta if k not in _KEYS)
    if unknown:
        raise fail(f"unknown key(s) {', '.join(unknown)}; allowed: {', '.join(sorted(_KEYS))}")
    for key in ("id", "title", "order", "lesson", "needs", "metric", "hints"):
        if key not in meta:
            raise fail(f"missing key '{key}'")
    ex_id, title, lesson = meta["id"], meta["title"], meta["lesson"]
    if not isinstance(ex_id, str) or not re.fullmatch(r"[a-z0-9][a-z0-9-]*", ex_id):
        raise fail(f"id {ex_id!r} must be lower-case letters, digits and dashes")
    for key, value in (("title", title), ("lesson", lesson)):
        if not isinstance(value, str) or not value.strip():
            raise fail(f"{key} must be non-empty text")
    order = meta["order"]
    if not isinstance(order, int) or isinstance(order, bool) or not 1 <= order <= 999:
        raise fail(f"order {order!r} must be a whole number from 1 to 999")
    needs_raw = meta["needs"]
    needs = (needs_raw,) if isinstance(needs_raw, str) else needs_raw
    if not isinstance(needs, list | tuple) or not needs or any(n not in NEEDS for n in needs):
        raise fail(f"needs {needs_raw!r} must be one of {', '.join(NEEDS)} (or a list of them)")
    metric = meta["metric"]
    if metric not in METRICS:
        raise fail(f"metric {metric!r} must be one of {', '.join(METRICS)}")
    grades = _grades(meta.get("grades"), metric, fail)
    hints = meta["hints"]
    if (
        not isinstance(hints, list)
        or not hints
        or not all(isinstance(h, str) and h.strip() for h in hints)
    ):
        raise fail("hints must be a non-empty list of text")
    limit = meta.get("time_limit", DEFAULT_TIME_LIMIT_S)
    if not isinstance(limit, int | float) or isinstance(limit, bool) or not 1 <= limit <= 600:
        raise fail(f"time_limit {limit!r} must be seconds from 1 to 600")
    summary = meta.get("summary", "")
    if not isinstance(summary, str):
        raise fail("summary must be text")
    return {
        "id": ex_id,
        "title": title.strip(),
        "order": order,
        "lesson": lesson.strip(),
        "needs": tuple(dict.fromkeys(needs)),
        "metric": metric,
        "grades": grades,
        "hints": tuple(h.strip() for h in hints),
        "time_limit": float(limit),
        "summary": summary.strip(),
        "intensity": intensity_from(meta.get("intensity"), metric in SPEED_METRICS, fail),
    }


def _grades(raw: Any, metric: str, fail: Any) -> dict[str, float]:
    if raw is None:
        if metric != "none":
            raise fail(f"metric {metric} needs grades: {{bronze, silver, gold}} as fractions")
        return {}
    if not isinstance(raw, Mapping) or sorted(raw) != sorted(GRADES):
        raise fail("grades must be {bronze, silver, gold}, fractions of the yardstick's speed")
    values = []
    for g in GRADES:
        v = raw[g]
        if not isinstance(v, int | float) or isinstance(v, bool) or not 0 < v <= 1:
            raise fail(f"grades.{g} {v!r} must be a fraction of the yardstick's speed, 0 to 1")
        values.append(float(v))
    if not values[0] <= values[1] <= values[2]:
        raise fail("grades must rise: bronze <= silver <= gold")
    if values[2] < EXPERT_GOLD:
        raise fail(
            f"grades.gold {values[2]} is below {EXPERT_GOLD}: gold means close to what our "
            "solution reaches on this GPU"
        )
    return dict(zip(GRADES, values, strict=True))
