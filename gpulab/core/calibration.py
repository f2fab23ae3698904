"""What both halves of the calibration share (calibration_cpu.py, calibration_gpu.py): the dtypes
each library's matrix products are measured in, and the line each figure adds to the run's log.
peaks.py decides what to measure and caches it; these modules measure."""

from __future__ import annotations

from typing import Any

GPU_DTYPES = ("fp64", "fp32", "tf32", "fp16", "bf16")
CPU_DTYPES = ("fp64", "fp32")
CUPY_DTYPES = ("fp64", "fp32", "fp16")  # CuPy has no bf16, and its fp32 products use no TF32


def log(ctx: Any, message: str) -> None:
    """A line for the run's log, where `ctx` has one (an experiment's Context; tests pass None)."""
    if ctx is not None and hasattr(ctx, "log"):
        ctx.log(message)
