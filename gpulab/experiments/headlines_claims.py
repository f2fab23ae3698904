"""Headlines of issue 16's measurements: cold start, occupancy, managed memory, and the
profiler (its top operator, and how many matmul kernels ran on tensor cores).

Registered into `headlines` (which imports this module at its end)."""

from __future__ import annotations

from typing import Any

from gpulab.core.results import Result
from gpulab.experiments.headlines import _for, duration, measured, times


@_for("cold-start")
def _cold_start(exp: Any, result: Result) -> str:
    s = result.summary
    ratio = s.get("fresh_total_over_warm")
    if not ratio:
        return ""
    steps = "import, CUDA context, first call" if s.get("device") == "gpu" else "import, first call"
    return (
        f"a fresh process took {duration(s['fresh_total_s'])} to its first result ({steps}): "
        f"{times(ratio)} this warm worker's median for the same op"
    )


@_for("occupancy")
def _occupancy(exp: Any, result: Result) -> str:
    rows = [m for m in measured(result) if m.contender == "scale" and m.throughput]
    if not rows:
        return ""
    best = max(rows, key=lambda m: m.throughput or 0.0)
    worst = min(rows, key=lambda m: m.throughput or 0.0)
    return (
        f"memory-bound kernel: {worst.throughput:.0f} GB/s at {worst.size} "
        f"({100 * worst.extra['occupancy']:.0f}% predicted occupancy) vs "
        f"{best.throughput:.0f} GB/s at {best.size} ({100 * best.extra['occupancy']:.0f}%)"
    )


@_for("managed-memory")
def _managed(exp: Any, result: Result) -> str:
    gbs = result.summary.get("gbs") or {}
    first, dev, pre = (gbs.get(k) for k in ("managed-first-touch", "device", "managed-prefetched"))
    if not first or not dev:
        return ""
    text = (
        f"a kernel on managed memory the CPU had just written ran at {first:.3g} GB/s, "
        f"{times(dev / first)} slower than on plain device memory"
    )
    return text + (f"; after a prefetch, {pre:.3g} GB/s" if pre else "")


def profiler_tensor_cores(result: Result) -> str:
    """The profiler headline's tail: how many matmul kernels used tensor cores, and the
    measured fact behind it (empty on the CPU)."""
    s = result.summary
    probe = s.get("probe") or {}
    if not probe.get("measured"):
        return ""
    return (
        f"; {s.get('tensor_core_kernels', 0)} of {s.get('matmul_kernels', 0)} matmul kernels "
        f"on tensor cores ({s.get('dtype')}), measured: {probe['measured']}"
    )


@_for("profiler")
def _profiler(exp: Any, result: Result) -> str:
    # Operators only: the kernel rows (GPU) are the same time seen from the device side.
    rows = [m for m in measured(result) if m.extra.get("kind") != "kernel"]
    if not rows:
        return ""
    top = max(rows, key=lambda m: m.time_median_s)
    share, of = top.extra.get("share_pct"), top.extra.get("share_of", "the profiled time")
    if share is None:
        return ""
    return (
        f"{top.contender} took the most time: {share:.0f}% of the {of.removeprefix('the ')} "
        f"({duration(top.time_median_s)} a step)"
    ) + profiler_tensor_cores(result)
