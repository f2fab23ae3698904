"""Check for elementwise-fused: out = max(alpha * x + y, 0) through cupy.ElementwiseKernel."""

from __future__ import annotations

from typing import Any

import numpy as np

from gpulab.exercises import api
from gpulab.exercises import kernel_checks as kc

ENTRY = "axpy_relu"
OWN_KERNEL = True  # the work must be done by a kernel the learner's file compiles


def cases(ctx: api.Context) -> list[api.Case]:
    out = []
    for j, n in enumerate([*api.EDGE_SIZES, ctx.big(4, arrays=3)]):
        x, y = (ctx.rng.uniform(-1000, 1000, n).astype(np.float32) for _ in range(2))
        alpha = float(np.float32(ctx.rng.uniform(0.5, 3.0) * (-1) ** j))
        out.append(api.Case(f"n={n}, alpha={alpha:.3g}", {"alpha": alpha, "x": x, "y": y}))
    return out


def expected(case: api.Case, ctx: api.Context) -> np.ndarray:
    a = case.args
    return np.maximum(a["alpha"] * a["x"].astype(np.float64) + a["y"], 0.0)


def run(fn: Any, case: api.Case, ctx: api.Context) -> np.ndarray:
    a = case.args
    since = kc.calls_so_far(ctx)
    got = kc.run_guarded(fn, [a["alpha"], a["x"], a["y"]], a["x"].shape, np.float32)
    kc.each_call(ctx, since, _one_launch)
    # x, y and out: 3 accesses an element (on the emulator)
    how = "a thread an element, or a few"
    kc.each_call(ctx, since, kc.walker_rule(a["x"].size, 3, how))
    return got


def _one_launch(launches: list[Any]) -> str | None:
    """Fused is one kernel: x and y read once, out written once. Two launches (the axpy, then
    a ReLU over out) write out twice and read it back."""
    if len(launches) > 1:
        names = ", ".join(la.kernel for la in launches[:3])
        return (
            f"your call launched {len(launches)} kernels ({names}): fusing is one kernel that "
            "reads x and y once and writes out once"
        )
    return None


def compare(want: np.ndarray, got: Any, case: api.Case, ctx: api.Context) -> api.Mismatch | None:
    # alpha * x rounds once (or not at all if fused into an FMA), then the sum: see grid-stride
    return kc.compare_guarded(want, got, rtol=1e-5, atol=1e-3)


def timing(fn: Any, ctx: api.Context) -> api.TimingSpec:
    import cupy as cp

    n = ctx.big(4, arrays=3)

    def setup(i: int) -> tuple:
        rng = kc.device_rng(ctx, i)
        x, y = rng.standard_normal(n, dtype=cp.float32), rng.standard_normal(n, dtype=cp.float32)
        return -1.5, x, y, cp.empty_like(x)

    def library(io: tuple) -> None:
        alpha, x, y, out = io
        cp.maximum(np.float32(alpha) * x + y, np.float32(0), out=out)

    return kc.spec(
        fn,
        setup,
        library,
        "cupy.maximum(alpha * x + y, 0)",
        12 * n,
        note="8 bytes read + 4 written per element",
    )
