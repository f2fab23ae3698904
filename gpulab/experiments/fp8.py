"""An fp8 (E4M3) matmul through torch._scaled_mm, with the scaling fp8 cannot do without.

E4M3 holds numbers up to 448 with 3 mantissa bits, so inputs are scaled into its range first:
per tensor, scale = amax / 448, x8 = (x / scale) in e4m3, and _scaled_mm multiplies the result
back by scale_a * scale_b (output in bf16). The second operand must be column-major. There is no
calibrated fp8 ceiling: the calibration measures plain torch.mm in the dtypes every GPU has, and
_scaled_mm is a private API whose signature has changed between torch releases; so the row
carries no % of peak and is read against the bf16 row (Hopper's fp8 rate is twice bf16's on the
datasheet). Needs compute capability 8.9 or newer (Ada, Hopper, Blackwell).
"""

from __future__ import annotations

from typing import Any

from gpulab.core.results import Measurement, Result
from gpulab.experiments import backends, result_rows, verification
from gpulab.experiments.base import Context
from gpulab.experiments.result_rows import row

E4M3_MAX = 448.0
CHECK_ROWS = 256
NOTE = (
    "needs scaling: e4m3 inputs with per-tensor scales (amax / 448), bf16 output; no "
    "calibrated fp8 ceiling, read it against the bf16 row"
)


def unsupported(torch: Any, device_index: int, size: int) -> str:
    """Why an fp8 matmul cannot run here, or "" when it can."""
    if not hasattr(torch, "float8_e4m3fn") or not hasattr(torch, "_scaled_mm"):
        return f"torch {torch.__version__} has no fp8 matmul (torch._scaled_mm)"
    major, minor = torch.cuda.get_device_capability(device_index)
    if (major, minor) < (8, 9):
        return (
            f"fp8 matmuls need compute capability 8.9 or newer (Ada, Hopper); this GPU is "
            f"{major}.{minor}"
        )
    if size % 16:
        return f"_scaled_mm needs sizes that are multiples of 16; size is {size}"
    return ""


def quantize(torch: Any, x: Any) -> tuple[Any, Any]:
    """x in e4m3 after dividing by its per-tensor scale, and the scale (a float32 scalar)."""
    scale = (x.abs().max().float() / E4M3_MAX).clamp(min=1e-12)
    return (x / scale).to(torch.float8_e4m3fn), scale


def scaled_mm(torch: Any, a8: Any, b8: Any, sa: Any, sb: Any) -> Any:
    """torch._scaled_mm into bf16, the product alone on every torch version."""
    out = torch._scaled_mm(a8, b8, scale_a=sa, scale_b=sb, out_dtype=torch.bfloat16)
    return out[0] if isinstance(out, tuple) else out  # torch < 2.5 also returned amax


def fp8_row(ctx: Context, result: Result, torch: Any, dev: Any, size: int) -> Measurement | None:
    """Time, check and emit the fp8 row; None (with the reason in `unavailable`) if it can't."""
    why = unsupported(torch, ctx.device_index, size)
    if why:
        result.unavailable["matmul-fp8"] = why
        return None
    a = torch.randn(size, size, device=dev)
    b = torch.randn(size, size, device=dev)
    a8, sa = quantize(torch, a)
    bt8, sb = quantize(torch, b.t().contiguous())
    b8 = bt8.t()  # column-major, as _scaled_mm requires

    def fn() -> Any:
        return scaled_mm(torch, a8, b8, sa, sb)

    out = fn()
    k = min(CHECK_ROWS, size)
    rows = out[:k].float() / (sa * sb)
    # Correctness: against float64 products of the very fp8 values that went in.
    result.verdicts.append(
        verification.matmul_verdict(
            "matmul-fp8", rows, a8[:k].float(), b8, "bf16", size=f"{size}", ctx=ctx
        )
    )
    # The price of fp8: the error against the unquantized fp32 product, shown, not judged.
    lost = verification.product_error(out[:k].float(), a[:k], b, ctx)
    del out, rows
    # Single calls with gaps first (boost clocks), as dtypes times every matmul; shown, never
    # compared with a ceiling.
    burst = ctx.timer.measure(fn, sync="torch")
    kw = backends.sustained(ctx, fn, "torch-cuda", always=True)
    timing = ctx.timer.measure(fn, sync="torch", **kw)
    m = row(
        "matmul-fp8",
        f"{size}",
        timing,
        work=2.0 * size**3,
        unit="TFLOP/s",
        scale=1e12,
        dtype="fp8-e4m3",
        flops_counted="2 * size^3",
        regime=backends.regime(kw),
        note=f"{NOTE}; error vs the unquantized product {lost:.1e}",
        needs_scaling=True,
        error_vs_unquantized=lost,
    )
    result_rows.emit(ctx, result, m)
    result_rows.emit(
        ctx,
        result,
        row(
            "matmul-fp8 single calls",
            f"{size}",
            burst,
            work=2.0 * size**3,
            unit="TFLOP/s",
            scale=1e12,
            dtype="fp8-e4m3",
            flops_counted="2 * size^3",
            regime="single calls with gaps (boost clocks)",
            note="boost clocks between calls: not comparable with the sustained row",
        ),
    )
    return m
