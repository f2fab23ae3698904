"""Headlines of the races (Monte Carlo, matmul, blur, the streaming kernels, bandwidth) and the
calibration: a rate, its share of this machine's ceiling, a lead over the baseline.

Registered into `headlines` (which imports this module at its end)."""

from __future__ import annotations

from typing import Any

from gpulab.core.results import Result
from gpulab.experiments.headlines import (
    GPU_BACKENDS,
    _for,
    backend,
    duration,
    fastest,
    label,
    measured,
    of_peak,
    rate,
    times,
)


@_for("montecarlo")
def _montecarlo(exp: Any, result: Result) -> str:
    s = result.summary
    est, err, se = s.get("estimate"), s.get("error"), s.get("standard_error")
    if est is None or err is None or not se:
        return ""
    who = label(exp, str(s.get("estimate_by", "")))
    return (
        f"pi ≈ {est:.6f} (error {err:.1e}, {err / se:.1f} standard errors) "
        f"from {int(s.get('samples_run', 0)):,} samples by {who}"
    )


@_for("matmul")
def _matmul(exp: Any, result: Result) -> str:
    rows = measured(result)
    sizes = sorted({int(m.size) for m in rows}, reverse=True)
    for n in sizes:
        at = [m for m in rows if int(m.size) == n]
        best = fastest(at)
        if best is None:
            continue
        gpu = backend(exp, best.contender) in GPU_BACKENDS
        base_id = "numpy" if gpu else "python"
        # Pure Python's extrapolated rows count as a baseline: that is what they are for.
        base = [
            m
            for m in result.measurements
            if m.contender == base_id and int(m.size) == n and m.time_median_s > 0
        ]
        if not base or best.contender == base_id:
            continue
        # Against the baseline's row in the same dtype where it ran one, else its fastest row:
        # an fp64 NumPy row must not inflate a bf16 GPU lead.
        same = [b for b in base if b.dtype == best.dtype]
        ref = min(same or base, key=lambda b: b.time_median_s)
        ratio = ref.time_median_s / best.time_median_s
        who = "the GPU" if gpu else label(exp, best.contender)
        guess = " (extrapolated)" if ref.extrapolated else ""
        return (
            f"{who} was {times(ratio)} faster than {label(exp, base_id)}{guess} at n={n} "
            f"({best.contender} {best.dtype}: {rate(best)}{of_peak(best, 'peak')})"
        )
    return ""


@_for("blur")
def _blur(exp: Any, result: Result) -> str:
    rows = measured(result)
    best = next(
        (m for cid in ("cupy-kernel", "torch", "scipy") for m in rows if m.contender == cid),
        None,
    )
    if best is None:
        return ""
    where = "GPU" if backend(exp, best.contender) in GPU_BACKENDS else "CPU"
    if best.percent_of_peak is not None:
        return (
            f"your blur ({label(exp, best.contender)}) ran at {best.percent_of_peak:.0f}% of "
            f"this {where}'s copy bandwidth ({rate(best)}, {best.size} in "
            f"{duration(best.time_median_s)})"
        )
    return f"{label(exp, best.contender)} blurred {best.size} in {duration(best.time_median_s)}"


@_for("calibrate")
def _calibrate(exp: Any, result: Result) -> str:
    p = result.summary.get("peaks") or {}
    what = "this CPU" if p.get("cpu") else "this GPU"
    parts = []
    if p.get("copy_gbs"):
        parts.append(f"copies at {p['copy_gbs']:.3g} GB/s")
    tflops = p.get("matmul_tflops") or {}
    if tflops:
        dtype, best = max(tflops.items(), key=lambda kv: kv[1] or 0)
        parts.append(f"multiplies matrices at {best:.3g} TFLOP/s ({dtype})")
    if p.get("h2d_pinned_gbs"):
        parts.append(f"takes {p['h2d_pinned_gbs']:.3g} GB/s from the host")
    return f"{what} " + ", ".join(parts) if parts else ""


@_for("kernel-fusion")
def _fusion(exp: Any, result: Result) -> str:
    gains = {k: v for k, v in result.summary.items() if "_over_" in k and v}
    if not gains:
        return _streaming(exp, result)
    key, x = max(gains.items(), key=lambda kv: kv[1])
    fused, eager = key.split("_over_")
    return f"{label(exp, fused)} ran at {times(x)} the rate of {label(exp, eager)}"


@_for("vector-add", "reduction")
def _streaming(exp: Any, result: Result) -> str:
    """Memory-bound work: the best GB/s, its share of the copy ceiling, the lead over NumPy."""
    rows = [m for m in measured(result) if m.unit == "GB/s"]
    best = fastest(rows)
    if best is None:
        return ""
    text = f"{label(exp, best.contender)} streamed {rate(best)}"
    text += of_peak(best, "the copy bandwidth")
    numpy = next((m for m in rows if m.contender == "numpy" and m.size == best.size), None)
    if numpy is not None and numpy is not best and numpy.throughput:
        text += f"; {times(best.throughput / numpy.throughput)} NumPy's rate"  # type: ignore[operator]
    return text


@_for("bandwidth")
def _bandwidth(exp: Any, result: Result) -> str:
    largest = result.summary.get("largest_size_gbs") or {}
    pin, page = largest.get("h2d-pinned"), largest.get("h2d-pageable")
    if pin:
        text = f"pinned host->GPU copies reached {pin:.3g} GB/s"
        if page:
            text += f", {times(pin / page)} pageable ({page:.3g} GB/s)"
        if largest.get("d2d"):
            text += f"; on the GPU itself {largest['d2d']:.3g} GB/s"
        return text
    host = largest.get("host-memcpy")
    if host:
        return f"this CPU's memory copied {host:.3g} GB/s at the largest size (no GPU rows here)"
    return ""
