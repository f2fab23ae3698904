"""Check for reduction-kernel: out[r] = sqrt(sum_c x[r, c] ** 2) with cupy.ReductionKernel."""

from __future__ import annotations

from typing import Any

import numpy as np

from gpulab.exercises import api
from gpulab.exercises import kernel_checks as kc

ENTRY = "row_norms"
# a ReductionKernel (the lesson), or a reduction of the learner's own in CUDA C (the expert's);
# an ElementwiseKernel looping over a row in one thread reduces nothing in parallel
OWN_KERNEL = ("ReductionKernel", "RawKernel", "RawModule")

COLS = 4096


def cases(ctx: api.Context) -> list[api.Case]:
    rows = max(1, ctx.big(4) // COLS)
    shapes = [(1, 1), (1, 2), (2, 31), (33, 33), (3, 1023), (5, 1025), (rows, COLS)]
    return [
        api.Case(f"{r}x{c}", {"x": ctx.rng.uniform(-100, 100, (r, c)).astype(np.float32)})
        for r, c in shapes
    ]


def expected(case: api.Case, ctx: api.Context) -> np.ndarray:
    x = case.args["x"].astype(np.float64)
    return np.sqrt((x * x).sum(axis=1))


def run(fn: Any, case: api.Case, ctx: api.Context) -> np.ndarray:
    x = case.args["x"]
    since = kc.calls_so_far(ctx)
    got = kc.run_guarded(fn, [x], (x.shape[0],), np.float32)
    kc.each_call(ctx, since, kc.row_rule(x.shape[1]))
    return got


def compare(want: np.ndarray, got: Any, case: api.Case, ctx: api.Context) -> api.Mismatch | None:
    return kc.compare_guarded(want, got, rtol=1e-4, atol=1e-3)


def timing(fn: Any, ctx: api.Context) -> api.TimingSpec:
    import cupy as cp

    rows = max(1, ctx.big(4) // COLS)

    def setup(i: int) -> tuple:
        x = kc.device_rng(ctx, i).standard_normal((rows, COLS), dtype=cp.float32)
        return x, cp.empty(rows, dtype=cp.float32)

    def library(io: tuple) -> None:
        io[1][...] = cp.linalg.norm(io[0], axis=1)

    return kc.spec(
        fn,
        setup,
        library,
        "cupy.linalg.norm(x, axis=1)",
        4 * rows * (COLS + 1),
        note="4 bytes read per element (+ 4 written per row)",
    )
