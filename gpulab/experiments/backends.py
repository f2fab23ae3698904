"""Per-backend plumbing for timing: how to synchronize, the sustained regime, dtypes, TF32.

Nothing here imports torch or CuPy at module level (the registry loads in the UI process).
"""

from __future__ import annotations

from typing import Any

from gpulab.core.timing import sustained_kw
from gpulab.experiments.base import Context


def sync_kind(backend: str) -> str:
    """How the timer synchronises for a backend: torch, cupy or none."""
    return {"torch-cuda": "torch", "cupy": "cupy"}.get(backend, "none")


def device_sync(backend: str) -> Any:
    """The host-blocking synchronize for `backend`'s device, or None for CPU backends."""
    kind = sync_kind(backend)
    if kind == "torch":
        import torch

        return torch.cuda.synchronize
    if kind == "cupy":
        import cupy

        return cupy.cuda.Device().synchronize
    return None


def sustained(ctx: Context, fn: Any, backend: str, *, always: bool = False) -> dict[str, Any]:
    """Timer.measure kwargs for a GPU matmul, timed the way the calibration times its own.

    Runs `fn` back to back for 0.5 s (0.1 s in quick mode) untimed, then returns the sustained
    regime's kwargs (`inner` calls per sample, no cold call) when a call takes 0.5 ms or more,
    or always with `always` (rows compared with each other or with the calibrated peak, which
    must all be timed alike). Shorter calls and CPU rows get {}: single calls, as before.
    """
    sync = device_sync(backend)
    if sync is None:
        return {}

    kw = sustained_kw(fn, sync, 0.1 if ctx.quick else 0.5, min_call_s=0.0 if always else 5e-4)
    ctx.check_cancelled()
    return kw


def sustained_timing(ctx: Context, fn: Any, backend: str) -> tuple[Any, dict[str, Any]]:
    """(`fn`'s Timing, the kwargs it was timed with) in the sustained regime on a GPU: for a row
    judged against the calibrated copy or matmul, where the host's launch latency between the
    events of a lone call would be billed to the kernel. Single calls on a CPU backend."""
    kw = sustained(ctx, fn, backend, always=True)
    return ctx.timer.measure(fn, sync=sync_kind(backend), **kw), kw


def regime(kw: dict[str, Any]) -> str:
    """How a row was timed, for its `regime` column: what `sustained` chose."""
    if kw.get("inner"):
        return f"sustained: {kw['inner']} back-to-back calls per sample, after an untimed warm-up"
    return "single calls"


def torch_dtype(name: str) -> Any:
    """The torch dtype for a dtype name (fp64, fp32, tf32, bf16, fp16, ...)."""
    import torch

    return {
        "fp64": torch.float64,
        "fp32": torch.float32,
        "tf32": torch.float32,
        "fp16": torch.float16,
        "bf16": torch.bfloat16,
    }[name]


class tf32_mode:  # noqa: N801 - used as a context manager
    """Turn TF32 matmuls on (for the tf32 rows) or off, and restore the setting on exit."""

    def __init__(self, on: bool) -> None:
        self.on = on

    def __enter__(self) -> None:
        import torch

        self.saved = torch.backends.cuda.matmul.allow_tf32
        torch.backends.cuda.matmul.allow_tf32 = self.on

    def __exit__(self, *exc: object) -> None:
        import torch

        torch.backends.cuda.matmul.allow_tf32 = self.saved
