"""Check for map-2d: out[r, c] = a[r, c] + r."""

from __future__ import annotations

from typing import Any

import numpy as np

from gpulab.exercises import api
from gpulab.exercises import kernel_checks as kc

ENTRY = "add_row_index"
# a RawKernel of the learner's: an ElementwiseKernel (or cupy.fuse) over the flat matrix, the row
# as i / cols, lets CuPy write the index, the guard and the launch this exercise teaches
OWN_KERNEL = ("RawKernel", "RawModule")


def big_shape(ctx: api.Context) -> tuple[int, int]:
    cols = 4099  # odd, not a multiple of the block's 32
    return max(1, ctx.big(4, arrays=2) // cols) | 1, cols


def cases(ctx: api.Context) -> list[api.Case]:
    shapes = [(1, 1), (2, 31), (31, 33), (33, 31), (1, 1025), (1025, 1), (67, 129), big_shape(ctx)]
    return [
        api.Case(f"{r}x{c}", {"a": ctx.rng.uniform(-1000, 1000, (r, c)).astype(np.float32)})
        for r, c in shapes
    ]


def expected(case: api.Case, ctx: api.Context) -> np.ndarray:
    a = case.args["a"].astype(np.float64)
    return a + np.arange(a.shape[0])[:, None]


def run(fn: Any, case: api.Case, ctx: api.Context) -> np.ndarray:
    a = case.args["a"]
    since = kc.calls_so_far(ctx)
    got = kc.run_guarded(fn, [a], a.shape, np.float32)
    # a read and a write an element (on the emulator, kernel_checks.walker_rule)
    how = "a grid of blocks covers the matrix, a thread an element (or a few)"
    kc.each_call(ctx, since, kc.walker_rule(a.size, 2, how))
    return got


def compare(want: np.ndarray, got: Any, case: api.Case, ctx: api.Context) -> api.Mismatch | None:
    return kc.compare_guarded(want, got)


def timing(fn: Any, ctx: api.Context) -> api.TimingSpec:
    import cupy as cp

    shape = big_shape(ctx)

    def setup(i: int) -> tuple:
        a = kc.device_rng(ctx, i).random(shape, dtype=cp.float32)
        return a, cp.empty_like(a)

    def library(io: tuple) -> None:
        a, out = io
        cp.add(a, cp.arange(shape[0], dtype=cp.float32)[:, None], out=out)

    n = shape[0] * shape[1]
    return kc.spec(
        fn,
        setup,
        library,
        "cupy.add (broadcast)",
        8 * n,
        note="4 bytes read + 4 written per element",
    )
