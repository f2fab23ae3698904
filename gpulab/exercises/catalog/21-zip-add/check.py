"""Check for zip-add: out = |a - b|, the absolute difference of two arrays."""

from __future__ import annotations

from typing import Any

import numpy as np

from gpulab.exercises import api
from gpulab.exercises import kernel_checks as kc

ENTRY = "abs_diff"
OWN_KERNEL = True  # the work must be done by a kernel the learner's file compiles


def cases(ctx: api.Context) -> list[api.Case]:
    out = []
    for n in [*api.EDGE_SIZES, ctx.big(4, arrays=3)]:
        a, b = (ctx.rng.uniform(-1000, 1000, n).astype(np.float32) for _ in range(2))
        out.append(api.Case(f"n={n}", {"a": a, "b": b}))
    return out


def expected(case: api.Case, ctx: api.Context) -> np.ndarray:
    return np.abs(case.args["a"].astype(np.float64) - case.args["b"])


def run(fn: Any, case: api.Case, ctx: api.Context) -> np.ndarray:
    a, b = case.args["a"], case.args["b"]
    return kc.run_guarded(fn, [a, b], a.shape, np.float32)


def compare(want: np.ndarray, got: Any, case: api.Case, ctx: api.Context) -> api.Mismatch | None:
    # float32's tolerance: a - b rounds once (half an ulp) and the absolute value is exact
    return kc.compare_guarded(want, got)


def timing(fn: Any, ctx: api.Context) -> api.TimingSpec:
    import cupy as cp

    # One kernel, as CuPy's idiom for a custom element-wise expression (cupy.abs(a - b) would
    # be two kernels and a temporary array)
    lib = cp.ElementwiseKernel(
        "float32 a, float32 b", "float32 out", "out = fabsf(a - b)", "gpulab_abs_diff"
    )
    n = ctx.big(4, arrays=3)

    def setup(i: int) -> tuple:
        rng = kc.device_rng(ctx, i)
        a, b = rng.random(n, dtype=cp.float32), rng.random(n, dtype=cp.float32)
        return a, b, cp.empty_like(a)

    def library(io: tuple) -> None:
        lib(io[0], io[1], io[2])

    return kc.spec(
        fn,
        setup,
        library,
        "cupy.ElementwiseKernel (out = |a - b|)",
        12 * n,
        note="8 bytes read + 4 written per element",
    )
