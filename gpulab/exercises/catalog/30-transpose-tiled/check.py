"""Check for transpose-tiled: out[c, r] = a[r, c]."""

from __future__ import annotations

from typing import Any

import numpy as np

from gpulab.exercises import api
from gpulab.exercises import kernel_checks as kc

ENTRY = "transpose"
OWN_KERNEL = True  # the work must be done by a kernel the learner's file compiles
# A correct kernel none of whose launches uses shared memory fails with this reason.
SHARED_MEMORY = (
    "this exercise is the tile: stage a 32 x 32 tile in a __shared__ array, so that the "
    "reads and the writes are both coalesced"
)


def big_shape(ctx: api.Context) -> tuple[int, int]:
    side = int(np.sqrt(ctx.big(4, arrays=2)))
    return max(1, side - 13) | 1, side + 7


def cases(ctx: api.Context) -> list[api.Case]:
    shapes = [(1, 1), (1, 33), (33, 1), (31, 33), (33, 31), (1023, 1025), big_shape(ctx)]
    return [
        api.Case(f"{r}x{c}", {"a": ctx.rng.uniform(-1000, 1000, (r, c)).astype(np.float32)})
        for r, c in shapes
    ]


def expected(case: api.Case, ctx: api.Context) -> np.ndarray:
    return case.args["a"].T.astype(np.float64)


def run(fn: Any, case: api.Case, ctx: api.Context) -> np.ndarray:
    a = case.args["a"]
    since = kc.calls_so_far(ctx)
    got = kc.run_guarded(fn, [a], a.shape[::-1], np.float32, repeats=kc.repeats(ctx, a.size))
    # each element written into a tile and read out of it: 2 accesses an element, asked at 1.5
    # (a kernel that misses a few elements is named by the comparison, not here)
    kc.each_call(ctx, since, kc.tile_traffic_rule(3 * a.size // 2, f"{a.size:,} elements"))
    # the tile is for coalescing: a warp's loads and its stores each one run (a tile staged
    # for show beside out[x][y] written from registers scatters the stores). Asked where both
    # sides hold a warp's 32
    if min(a.shape) >= 32:
        kc.each_call(ctx, since, kc.coalesced_rule())
    return got


def compare(want: np.ndarray, got: Any, case: api.Case, ctx: api.Context) -> api.Mismatch | None:
    return kc.compare_guarded(want, got)


def timing(fn: Any, ctx: api.Context) -> api.TimingSpec:
    import cupy as cp

    rows, cols = big_shape(ctx)

    def setup(i: int) -> tuple:
        a = kc.device_rng(ctx, i).random((rows, cols), dtype=cp.float32)
        return a, cp.empty((cols, rows), dtype=cp.float32)

    def library(io: tuple) -> None:
        cp.copyto(io[1], io[0].T)

    return kc.spec(
        fn,
        setup,
        library,
        "cupy.copyto(out, a.T)",
        8 * rows * cols,
        note="4 bytes read + 4 written per element",
    )
