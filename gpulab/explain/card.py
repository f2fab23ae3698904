"""The explain card the exercise view shows: Tier 0 after a graded check, or on the Explain key.

Pure Python over gpulab.explain (no textual, torch or CuPy), so the UI calls it in a thread:
`for_check()` explains the learner's file with the check's own figure on the roofline (its
learner value, against this machine's calibrated ceilings when they are cached), `for_file()`
without a figure; both take their inputs from gpulab.explain.inputs, as `gpulab ex explain`
does. `card_lines()` gives the compact card (the worst findings, one line each, value ->
verdict -> what to try, tagged [m] measured, [s] static or [e] estimated).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gpulab.exercises.loader import Exercise
from gpulab.explain import inputs
from gpulab.explain.explainer import explain_file
from gpulab.explain.findings import Explanation, fit
from gpulab.explain.source import scan
from gpulab.explain.triton_kernels import jit_functions


def has_kernels(path: Path) -> bool:
    """Whether the file builds a RawKernel or RawModule, or defines a Triton kernel, that the
    static tier can read."""
    try:
        text = path.read_text(encoding="utf-8")
        return bool(scan(text).kernels or jit_functions(text))
    except (OSError, SyntaxError, ValueError):
        return False


def for_file(
    ex: Exercise, path: Path, given: inputs.CardInputs | None = None
) -> Explanation | None:
    """Tier 0 of the learner's file for exercise `ex`; None when it has no kernel to read."""
    if not has_kernels(path):
        return None
    if given is None:
        given = inputs.machine(0)
        given.exercise = ex
    return explain_file(path, **given.kwargs())


def for_check(ex: Exercise, path: Path, result: Any) -> Explanation | None:
    """Tier 0 after a graded check of a kernel exercise (a passed check with timing); None for
    any other check."""
    timing = getattr(result, "timing", None) or {}
    if not ex.graded_by_speed or not getattr(result, "passed", False) or not timing:
        return None
    return for_file(ex, path, inputs.for_check(ex, timing))


def card_lines(e: Explanation | None, width: int, limit: int = 4) -> list[str]:
    """The compact card: a title, up to `limit` findings and the tier's one-line legend."""
    if e is None:
        return []
    tier = "measured by Nsight Compute" if e.tier else "static"
    lines = [fit(f"Why this speed ({tier}; {e.arch}):", width, "…")]
    lines += e.compact(width, limit)
    if not e.tier:
        lines.append(fit("[m] measured [s] static [e] estimated · f4 again: measure", width, "…"))
    else:
        lines.append(fit("[m] measured [s] static [e] estimated", width, "…"))
    return lines
