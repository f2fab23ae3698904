"""Check for grid-2d: transpose a rows x cols float32 matrix with a 2-D grid of 2-D blocks.

Every shape but the first is non-square and few are multiples of any block size, so swapping
rows and columns in the grid, rounding the grid down, or missing one of the two bounds checks
fails somewhere. `out` is a view at the front of a larger poisoned buffer: an unwritten element
stays NaN, and a write past the end changes the guard behind it. A transpose copies bits, so the
comparison is exact.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from gpulab.exercises import api

ENTRY = "transpose"
OWN_KERNEL = True  # the work must be done by a kernel the learner's file compiles

GUARD = 64 * 1024  # poisoned elements behind `out`: more than a row of tiles can overrun
SHAPES = ((1, 1), (1, 33), (2, 31), (31, 33), (33, 1023), (1025, 31), (257, 1023))


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
    import cupy as cp

    rows, cols = case.args["a"].shape
    n = rows * cols
    with cp.cuda.Device(ctx.device_index):
        a = cp.asarray(case.args["a"])
        buf = api.poison(n + GUARD, np.float32, xp=cp)
        out = buf[:n].reshape(cols, rows)
        fn(a, out)
        cp.cuda.Device().synchronize()  # a launch error or a bad address surfaces here
        tail = cp.isnan(buf[n:])
        if not bool(tail.all()):
            past = int(cp.argmax(~tail))
            raise api.CheckError(
                f"the kernel wrote past the end of out (at flat index {n + past}; out is "
                f"{cols} x {rows}, {n} elements): check both the row and the column against the bounds"
            )
        if not bool(cp.array_equal(a, cp.asarray(case.args["a"]))):
            raise api.CheckError("transpose changed its input a: write only into out")
        return cp.asnumpy(out)


def compare(
    want: np.ndarray, got: np.ndarray, case: api.Case, ctx: api.Context
) -> api.Mismatch | None:
    return api.compare_arrays(want, got, dtype=np.float32, rtol=0.0, atol=0.0)


def timing(fn: Any, ctx: api.Context) -> api.TimingSpec:
    import cupy as cp

    rows, cols = big_shape(ctx)

    def setup(i: int) -> Any:
        with cp.cuda.Device(ctx.device_index):
            g = cp.random.default_rng(ctx.seed + i)
            a = g.random((rows, cols), dtype=cp.float32) + 0.5
            return a, cp.full((cols, rows), cp.nan, dtype=cp.float32)

    def verify(inputs: Any) -> str | None:
        a, out = inputs
        if not bool(cp.array_equal(out, a.T)):
            return "out does not hold the transpose of a after the timed calls"
        return None

    return api.TimingSpec(
        setup=setup,
        learner=lambda s: fn(*s),
        library=lambda s: cp.copyto(s[1], s[0].T),
        library_name="cupy.copyto(out, a.T)",
        work=2 * 4.0 * rows * cols,
        metric="GB/s",
        ceiling="copy",
        sync="cupy",
        note=f"{rows} x {cols} float32: the matrix read once and written once",
        verify=verify,
    )
