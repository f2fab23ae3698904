"""Check for bandwidth: the learner measures host-to-device copies, pageable and pinned, in GB/s.

The check measures the same copies itself before the learner's code is loaded (expected()), and
reads this device's calibrated pinned host-to-device figure (the "h2d" ceiling). A reported
figure is accepted when it is near the check's own measurement and not above the ceiling:
a copy cannot beat the link, so a figure above it means the timer stopped before the copy did.
Transfers are noisy, pageable ones most (they go through a staging buffer on the CPU), so the
bounds are wide; a forgotten synchronize, an unpinned "pinned" buffer or a wrong unit is still
off by far more.
"""

from __future__ import annotations

import statistics
import time
from typing import Any

from gpulab.exercises import api

ENTRY = "measure_h2d"
MIB = 1 << 20
# Accepted: check's figure x [low, high], and never above the ceiling x CEILING_SLACK.
PINNED_BOUNDS = (0.6, 1.6)
PAGEABLE_BOUNDS = (0.4, 2.5)
CEILING_SLACK = 1.10


def cases(ctx: api.Context) -> list[api.Case]:
    sizes = (16 * MIB,) if ctx.quick else (64 * MIB, 256 * MIB)
    return [api.Case(f"{n // MIB} MiB", {"nbytes": n}) for n in sizes]


def _copy_gbs(src: Any, dst: Any, repeats: int = 7) -> float:
    """Median GB/s of host-to-device copies of src into dst (the first call is a warm-up)."""
    import torch

    times = []
    for i in range(repeats + 1):
        torch.cuda.synchronize(dst.device)
        t0 = time.perf_counter()
        dst.copy_(src, non_blocking=True)
        torch.cuda.synchronize(dst.device)  # the copy is done, not merely queued
        if i:
            times.append(time.perf_counter() - t0)
    return src.numel() * src.element_size() / statistics.median(times) / 1e9


def _ceiling(ctx: api.Context) -> float | None:
    """This device's calibrated pinned host-to-device GB/s (measured once, then cached)."""
    try:
        from gpulab.core import peaks as pk
        from gpulab.core.devices import detect
        from gpulab.experiments.base import Context

        ectx = Context(inventory=detect(), device_index=ctx.device_index, quick=ctx.quick)
        found = pk.peak_for(pk.load_or_measure(ectx, quick=ctx.quick), "h2d")
        return float(found) if found is not None else None
    except Exception:  # no calibration: the check's own pinned figure stands in below
        return None


def expected(case: api.Case, ctx: api.Context) -> dict[str, float | None]:
    import torch

    n = case.args["nbytes"]
    device = torch.device(ctx.device)
    dst = torch.empty(n, dtype=torch.uint8, device=device)
    pageable = torch.full((n,), 3, dtype=torch.uint8)  # written, so its pages exist
    pinned = pageable.pin_memory()
    got = {"pageable": _copy_gbs(pageable, dst), "pinned": _copy_gbs(pinned, dst)}
    ceiling = _ceiling(ctx)
    got["ceiling"] = max(ceiling, got["pinned"]) if ceiling else got["pinned"]
    return got


def run(fn: Any, case: api.Case, ctx: api.Context) -> dict[str, float]:
    got = fn(case.args["nbytes"])
    if not isinstance(got, dict) or not {"pageable", "pinned"} <= set(got):
        raise api.CheckError(
            "measure_h2d must return a dict with 'pageable' and 'pinned' figures in GB/s"
        )
    out = {}
    for key in ("pageable", "pinned"):
        value = got[key]
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
            raise api.CheckError(f"{key} = {value!r}: expected a positive number of GB/s")
        out[key] = float(value)
    return out


def compare(want: dict, got: dict, case: api.Case, ctx: api.Context) -> api.Mismatch | None:
    ceiling = want["ceiling"] * CEILING_SLACK
    for key in ("pinned", "pageable"):
        if got[key] > ceiling:
            return api.Mismatch(
                f"{key} = {got[key]:.1f} GB/s is faster than this machine's link "
                f"({want['ceiling']:.1f} GB/s calibrated): did the timer stop before the copy "
                "finished (synchronize), or is the unit not GB/s?",
                expected=want["ceiling"],
                got=got[key],
            )
    for key, (low, high) in (("pinned", PINNED_BOUNDS), ("pageable", PAGEABLE_BOUNDS)):
        w, g = want[key], got[key]
        if not low * w <= g <= high * w:
            return api.Mismatch(
                f"{key} = {g:.2f} GB/s, but the check measured {w:.2f} GB/s for the same copy "
                f"(accepted {low * w:.2f} to {high * w:.2f})",
                expected=w,
                got=g,
                max_error=abs(g - w),
            )
    return None
