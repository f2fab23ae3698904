"""The explain card the exercise view shows: Tier 0 after a graded check, or on the Explain key.

Pure Python over gpulab.explain (no textual, torch or CuPy), so the UI calls it in a thread:
`for_check()` explains the learner's file with the check's own figure on the roofline (its
learner value, against this machine's calibrated copy and matmul ceilings when they are cached),
`for_file()` without a figure; `card_lines()` gives the compact card (the worst findings, one line
each, value -> verdict -> what to try, tagged [m] measured, [s] static or [e] estimated).
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

from gpulab.explain.findings import Explanation

KERNEL_METRICS = ("GB/s", "TFLOP/s")


def has_kernels(path: Path) -> bool:
    """Whether the file builds a RawKernel or RawModule the static tier can read."""
    from gpulab.explain.source import scan  # deferred: loaded when used

    try:
        return bool(scan(path.read_text(encoding="utf-8")).kernels)
    except (OSError, SyntaxError, ValueError):
        return False


def _ceilings(device: str | None) -> dict[str, Any]:
    from gpulab.core.peaks import peak_for  # deferred: loaded when used
    from gpulab.explain.cli import calibration  # deferred: loaded when used

    peaks = calibration(device)
    if peaks is None:
        return {}
    copy, compute = peak_for(peaks, "copy"), peak_for(peaks, "matmul:fp32")
    if not copy or not compute:
        return {}
    return {"bandwidth_gbs": float(copy), "compute_tflops": float(compute)}


def for_file(ex: Any, path: Path, **extra: Any) -> Explanation | None:
    """Tier 0 of the learner's file for exercise `ex`; None when it has no kernel to read."""
    from gpulab.explain import arch as arches  # deferred: loaded when used
    from gpulab.explain.cli import nvml_gpu  # deferred: loaded when used
    from gpulab.explain.explainer import explain_file  # deferred: loaded when used

    if not has_kernels(path):
        return None
    gpu = nvml_gpu(0)
    kw: dict[str, Any] = {}
    if gpu and gpu.get("arch") in arches.ARCHS:
        kw |= {"arch": gpu["arch"], "card": gpu["name"], "sms": gpu["sms"]}
    kw |= extra
    return explain_file(path, exercise=ex.id, metric=ex.metric, check_path=ex.check_path, **kw)


def for_check(ex: Any, path: Path, result: Any) -> Explanation | None:
    """Tier 0 after a graded check of a kernel exercise (a passed check with timing); None for
    any other check."""
    timing = getattr(result, "timing", None) or {}
    if ex.metric not in KERNEL_METRICS or not getattr(result, "passed", False) or not timing:
        return None
    value = (timing.get("learner") or {}).get("value")
    extra: dict[str, Any] = {}
    if value:
        with contextlib.suppress(Exception):  # no calibration cached: no roofline point
            ceilings = _ceilings((timing.get("ceiling") or {}).get("device"))
            if ceilings:
                extra = {"figure": float(value), **ceilings}
    return for_file(ex, path, **extra)


def card_lines(e: Explanation | None, width: int, limit: int = 4) -> list[str]:
    """The compact card: a title, up to `limit` findings and the tier's one-line legend."""
    if e is None:
        return []
    tier = "measured by Nsight Compute" if e.tier else "static"
    lines = [_fit(f"Why this speed ({tier}; {e.arch}):", width)]
    lines += e.compact(width, limit)
    if not e.tier:
        lines.append(_fit("[m] measured [s] static [e] estimated · f4 again: measure", width))
    else:
        lines.append(_fit("[m] measured [s] static [e] estimated", width))
    return lines


def _fit(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"
