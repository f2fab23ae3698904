"""`gpulab ex explain`: why a learner's kernel runs at the speed it does, one line per finding.

Tier 0 (this package) needs no profiler and, for its static part, no GPU. For each kernel of
the learner's file (found with `ast`, never executed: source.py) it compiles the CUDA C with
NVRTC for the target architecture (nvrtc.py, cached by source hash) and reads

- registers, shared and local memory and spills (cubin.py, ptxas's log);
- theoretical occupancy and what limits it, and the grid's waves (occupancy.py), for the launch
  the grader recorded or, failing that, the one written in the source;
- the PTX's memory instructions: vector width, coalescing and bank conflicts from the
  address arithmetic, atomics in the main loop, an inner loop's FMAs per shared load
  (ptx.py, access.py, diagnose.py);
- the graded figure as a point on this GPU's roofline (roofline.py).

With `gpu=True` (a GPU and CuPy in this process) the driver's figures replace the computed ones
where it has them (device.py). Entry points: `explain()` for a file's text, `explain_file()`.

Import cost: this package imports neither torch nor CuPy (the UI may call it), and no textual.
"""

from __future__ import annotations

from typing import Any

__all__ = ["Explanation", "Finding", "KernelReport", "explain", "explain_file"]


def __getattr__(name: str) -> Any:
    # Lazy: `gpulab ex` registers its explain options on every CLI start, which must not pay
    # for the analysis modules.
    if name in ("explain", "explain_file"):
        from gpulab.explain import explainer

        return getattr(explainer, name)
    if name in ("Explanation", "Finding", "KernelReport"):
        from gpulab.explain import findings

        return getattr(findings, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
