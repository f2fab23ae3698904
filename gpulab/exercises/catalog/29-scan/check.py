"""Check for scan: inclusive prefix sum of int32, exact."""

from __future__ import annotations

from typing import Any

import numpy as np

from gpulab.exercises import api
from gpulab.exercises import kernel_checks as kc

ENTRY = "cumsum"
OWN_KERNEL = True  # the work must be done by a kernel the learner's file compiles


def cases(ctx: api.Context) -> list[api.Case]:
    sizes = [*api.EDGE_SIZES, 256 * 256 + 1, ctx.big(4, arrays=2)]
    return [
        api.Case(f"n={n}", {"x": kc.nonzero_ints(ctx.rng, -9, 9, n).astype(np.int32)})
        for n in sizes
    ]


def expected(case: api.Case, ctx: api.Context) -> np.ndarray:
    return np.cumsum(case.args["x"], dtype=np.int64).astype(np.int32)


def run(fn: Any, case: api.Case, ctx: api.Context) -> np.ndarray:
    x = case.args["x"]
    since = kc.calls_so_far(ctx)
    got = kc.run_guarded(fn, [x], x.shape, np.int32, repeats=kc.repeats(ctx, x.size))
    kc.each_call(ctx, since, kc.parallel_rule(x.size))
    return got


def compare(want: np.ndarray, got: Any, case: api.Case, ctx: api.Context) -> api.Mismatch | None:
    return kc.compare_guarded(want, got)


def timing(fn: Any, ctx: api.Context) -> api.TimingSpec:
    import cupy as cp

    n = ctx.big(4, arrays=2)

    def setup(i: int) -> tuple:
        x = (kc.device_rng(ctx, i).random(n, dtype=cp.float32) * 19 - 9).astype(cp.int32)
        return x, cp.empty_like(x)

    def library(io: tuple) -> None:
        cp.cumsum(io[0], dtype=cp.int32, out=io[1])

    return kc.spec(
        fn, setup, library, "cupy.cumsum", 8 * n, note="4 bytes read + 4 written per element"
    )
