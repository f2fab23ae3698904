"""Check for stencil-shared: a 7-wide window sum with zeros outside the array."""

from __future__ import annotations

from typing import Any

import numpy as np

from gpulab.exercises import api
from gpulab.exercises import kernel_checks as kc

ENTRY = "window_sum"
OWN_KERNEL = True  # the work must be done by a kernel the learner's file compiles
# A correct kernel none of whose launches uses shared memory fails with this reason.
SHARED_MEMORY = (
    "this exercise is the tile: load the block's values and its halo into a __shared__ "
    "array once, then sum from it"
)

RADIUS = 3


def cases(ctx: api.Context) -> list[api.Case]:
    return [
        api.Case(f"n={n}", {"a": kc.nonzero_ints(ctx.rng, -1000, 1000, n).astype(np.float32)})
        for n in [*api.EDGE_SIZES, ctx.big(4, arrays=2)]
    ]


def expected(case: api.Case, ctx: api.Context) -> np.ndarray:
    a = case.args["a"].astype(np.float64)
    padded = np.concatenate([np.zeros(RADIUS), a, np.zeros(RADIUS)])
    c = np.concatenate([[0.0], np.cumsum(padded)])
    return c[2 * RADIUS + 1 :] - c[: -2 * RADIUS - 1]


def run(fn: Any, case: api.Case, ctx: api.Context) -> np.ndarray:
    a = case.args["a"]
    since = kc.calls_so_far(ctx)
    got = kc.run_guarded(fn, [a], a.shape, np.float32, repeats=kc.repeats(ctx, a.size))
    # the tile loads each input about once (the halo adds 6 a block of 256); three loads an
    # output at most. A tile stored and thrown away beside the window summed from global
    # memory loads 7 an output. Asked where the halo is a sliver of the array
    if a.size >= 1024:
        what = f"{a.size:,} outputs of 7 terms"
        kc.each_call(ctx, since, kc.global_reads_rule(3 * a.nbytes, what))
    return got


def compare(want: np.ndarray, got: Any, case: api.Case, ctx: api.Context) -> api.Mismatch | None:
    return kc.compare_guarded(want, got, rtol=0.0, atol=0.5)  # whole numbers: exact


def timing(fn: Any, ctx: api.Context) -> api.TimingSpec:
    import cupy as cp
    import cupyx.scipy.ndimage as ndi

    n = ctx.big(4, arrays=2)
    ones = cp.ones(2 * RADIUS + 1, dtype=cp.float32)

    def setup(i: int) -> tuple:
        a = kc.device_rng(ctx, i).random(n, dtype=cp.float32)
        return a, cp.empty_like(a)

    def library(io: tuple) -> None:
        ndi.correlate1d(io[0], ones, mode="constant", cval=0.0, output=io[1])

    return kc.spec(
        fn,
        setup,
        library,
        "cupyx.scipy.ndimage.correlate1d",
        8 * n,
        note="4 bytes read + 4 written per element",
    )
