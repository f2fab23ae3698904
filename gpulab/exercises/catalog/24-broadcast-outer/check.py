"""Check for broadcast-outer: out[r, c] = col[r] + row[c]."""

from __future__ import annotations

from typing import Any

import numpy as np

from gpulab.exercises import api
from gpulab.exercises import kernel_checks as kc

ENTRY = "outer_add"
# a RawKernel of the learner's: an ElementwiseKernel handed col[:, None] and row[None, :] lets
# CuPy do the broadcasting this exercise teaches
OWN_KERNEL = ("RawKernel", "RawModule")


def big_shape(ctx: api.Context) -> tuple[int, int]:
    cols = 4097
    return max(1, ctx.big(4) // cols) | 1, cols


def cases(ctx: api.Context) -> list[api.Case]:
    shapes = [(1, 1), (2, 31), (31, 33), (33, 31), (1, 1025), (1025, 1), (67, 129), big_shape(ctx)]
    out = []
    for r, c in shapes:
        col = ctx.rng.uniform(-1000, 1000, r).astype(np.float32)
        row = ctx.rng.uniform(-1, 1, c).astype(np.float32)
        out.append(api.Case(f"{r}x{c}", {"col": col, "row": row}))
    return out


def expected(case: api.Case, ctx: api.Context) -> np.ndarray:
    return case.args["col"].astype(np.float64)[:, None] + case.args["row"][None, :]


def run(fn: Any, case: api.Case, ctx: api.Context) -> np.ndarray:
    col, row = case.args["col"], case.args["row"]
    since = kc.calls_so_far(ctx)
    got = kc.run_guarded(fn, [col, row], (col.size, row.size), np.float32)
    # two reads and a write an output (on the emulator, kernel_checks.walker_rule)
    how = "a 2-D grid covers out, a thread an element (or a few)"
    kc.each_call(ctx, since, kc.walker_rule(col.size * row.size, 3, how))
    return got


def compare(want: np.ndarray, got: Any, case: api.Case, ctx: api.Context) -> api.Mismatch | None:
    return kc.compare_guarded(want, got)


def timing(fn: Any, ctx: api.Context) -> api.TimingSpec:
    import cupy as cp

    rows, cols = big_shape(ctx)

    def setup(i: int) -> tuple:
        rng = kc.device_rng(ctx, i)
        col, row = rng.random(rows, dtype=cp.float32), rng.random(cols, dtype=cp.float32)
        return col, row, cp.empty((rows, cols), dtype=cp.float32)

    def library(io: tuple) -> None:
        col, row, out = io
        cp.add(col[:, None], row[None, :], out=out)

    work = 4 * (rows + cols + rows * cols)
    return kc.spec(
        fn, setup, library, "cupy.add (broadcast)", work, note="inputs read once + out written"
    )
