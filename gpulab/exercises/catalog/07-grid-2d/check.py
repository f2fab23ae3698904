"""Check for grid-2d: transpose a rows x cols float32 matrix with a 2-D grid of 2-D blocks.

Every shape but the first is non-square and few are multiples of any block size, so swapping
rows and columns in the grid, rounding the grid down, or missing one of the two bounds checks
fails somewhere. `out` is a view in the middle of a larger poisoned buffer (gpulab/exercises/kernel_checks.py):
an unwritten element stays NaN, and a write before its start or past its end changes a guard;
`a` sits in a guarded buffer too and must be unchanged after every call. A transpose copies bits,
so the comparison is exact. Every timed call is checked against `cupy.copyto(out, a.T)`.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from gpulab.exercises import api
from gpulab.exercises import kernel_checks as kc

ENTRY = "transpose"
OWN_KERNEL = True  # the work must be done by a kernel the learner's file compiles

SHAPES = ((1, 1), (1, 33), (2, 31), (31, 33), (33, 1023), (1025, 31), (257, 1023))
# A matrix whose shorter side is longer than this needs more than one block in y, whatever side
# y follows: a 2-D block covers at most this many rows (or columns) with a tile of its own
ONE_BLOCK_Y = 128


def shape_rule(ctx: api.Context, rows: int, cols: int) -> str | None:
    """Why the last call's launches are not a 2-D grid of 2-D blocks, or None. On a matrix of
    more than one row and column some launch must have 2-D blocks (blockDim.y > 1), and where
    the shorter side is longer than ONE_BLOCK_Y (and the block's y) a 2-D grid too (gridDim.y >
    1): the two ceiling divisions and two bounds checks are the lesson, and a 1-D launch over
    the flat index, split into (r, c) by / and %, has neither."""
    watch = ctx.watch
    if watch is None or not watch.calls or rows < 2 or cols < 2:
        return None
    launches = watch.calls[-1].launches
    if not launches:
        return None  # no kernel of theirs: OWN_KERNEL says so
    shown = ", ".join(
        f"{la.kernel} grid {kc.xy(la.grid)[0]} x {kc.xy(la.grid)[1]}, block "
        f"{kc.xy(la.block)[0]} x {kc.xy(la.block)[1]}"
        for la in launches[:2]
    )
    two_d = [la for la in launches if kc.xy(la.block)[1] > 1]
    if not two_d:
        return (
            f"your launch is not 2-D ({shown}): this exercise asks for a 2-D grid of 2-D blocks "
            "(blockDim.y > 1), x along the columns and y down the rows"
        )
    tall = min(rows, cols)
    if all(tall > max(ONE_BLOCK_Y, kc.xy(la.block)[1]) for la in two_d) and not any(
        kc.xy(la.grid)[1] > 1 for la in two_d
    ):
        return (
            f"your grid is not 2-D on a {rows} x {cols} matrix ({shown}): this exercise asks for "
            "a 2-D grid of 2-D blocks (gridDim.y = ceil(rows / blockDim.y) > 1)"
        )
    return None


def _matrix(rng: np.random.Generator, rows: int, cols: int) -> np.ndarray:
    # Both signs, 1e-3 to 1e6, never zero: every element is distinct with high probability.
    mag = np.power(np.float32(10.0), rng.random((rows, cols), dtype=np.float32) * 9 - 3)
    return mag * (rng.integers(0, 2, (rows, cols), dtype=np.int8) * 2 - 1).astype(np.float32)


def big_shape(ctx: api.Context) -> tuple[int, int]:
    """A wide, odd-sized matrix of about the device-filling element count."""
    n = ctx.big(4, arrays=2)
    rows = max(1, int(math.sqrt(n / 2))) | 1
    return rows, max(1, n // rows) | 1


def cases(ctx: api.Context) -> list[api.Case]:
    shapes = [*SHAPES, big_shape(ctx)]
    out = []
    for i, (r, c) in enumerate(shapes):
        note = " (fills the device)" if i == len(shapes) - 1 else ""
        out.append(api.Case(f"{r} x {c}{note}", {"a": _matrix(ctx.rng, r, c)}))
    return out


def expected(case: api.Case, ctx: api.Context) -> np.ndarray:
    return np.ascontiguousarray(case.args["a"].T)


def run(fn: Any, case: api.Case, ctx: api.Context) -> np.ndarray:
    a = case.args["a"]
    got = kc.run_guarded(fn, [a], a.shape[::-1], np.float32, names=("a",))
    why = shape_rule(ctx, *a.shape)
    if why:
        raise api.CheckError(why)
    return got


def compare(want: np.ndarray, got: Any, case: api.Case, ctx: api.Context) -> api.Mismatch | None:
    return kc.compare_guarded(want, got, rtol=0.0, atol=0.0)  # a transpose copies bits


def timing(fn: Any, ctx: api.Context) -> api.TimingSpec:
    import cupy as cp

    rows, cols = big_shape(ctx)

    def setup(i: int) -> tuple:
        a = kc.device_rng(ctx, i).random((rows, cols), dtype=cp.float32) + np.float32(0.5)
        return a, cp.empty((cols, rows), dtype=cp.float32)

    def library(io: tuple) -> None:
        cp.copyto(io[1], io[0].T)

    return kc.spec(
        fn,
        setup,
        library,
        "cupy.copyto(out, a.T)",
        2 * 4.0 * rows * cols,
        rtol=0.0,
        atol=0.0,
        note=f"{rows} x {cols} float32: the matrix read once and written once",
    )
