"""Check for grid-stride: out = alpha * x + y with a grid that does not grow with n.

The grid is the lesson, so the check reads it from the launch (ctx.watch, the grader's record of
the learner's launches): every launch of every call, timed calls included, must be a RawKernel
(or RawModule) launch, and all of a call's launches together at most BLOCKS_PER_SM blocks per
SM (many small launches are one growing grid, split up). A grid that grows with n would
pass every case without the loop doing anything; it fails with the grid it used.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from gpulab.exercises import api
from gpulab.exercises import kernel_checks as kc

ENTRY = "saxpy"
OWN_KERNEL = True  # the work must be done by a kernel the learner's file compiles
BLOCKS_PER_SM = 8  # the statement's fixed grid: 8 blocks of 256 threads per SM, whatever n


def _blocks(grid: Any) -> int:
    dims = grid if isinstance(grid, tuple | list) else (grid,)
    return int(np.prod([int(d) for d in dims], dtype=np.int64))


def grid_rule(ctx: api.Context, calls: int = 1) -> str | None:
    """Why the launches of the last `calls` calls break the fixed-grid rule, or None."""
    watch = ctx.watch
    if watch is None:  # not under the grader (a test calling run() directly)
        return None
    limit = BLOCKS_PER_SM * kc.sm_count()
    for record in watch.calls[-calls:]:
        for launch in record.launches:
            if launch.grid is None:
                return (
                    f"your {launch.kind} {launch.kernel} picks its own grid from n: this "
                    "exercise is about a fixed grid, so launch a RawKernel with one"
                )
        # All the launches of one call together: many small launches that each stay under the
        # limit are one grid growing with n, split up
        blocks = sum(_blocks(launch.grid) for launch in record.launches)
        if blocks > limit:
            many = len(record.launches)
            split = f" over {many} launches" if many > 1 else ""
            return (
                f"your call launched {blocks} blocks{split}; this exercise fixes the grid at "
                f"{BLOCKS_PER_SM} blocks per SM at most ({limit} on this GPU) for a whole call, "
                "whatever n: the grid must not grow with n, the grid-stride loop covers the rest"
            )
    return None


def cases(ctx: api.Context) -> list[api.Case]:
    out = []
    for n in [*api.EDGE_SIZES, ctx.big(4, arrays=3)]:
        x, y = (ctx.rng.uniform(-1000, 1000, n).astype(np.float32) for _ in range(2))
        alpha = float(np.float32(ctx.rng.uniform(0.5, 3.0) * ctx.rng.choice([-1, 1])))
        out.append(api.Case(f"n={n}, alpha={alpha:.3g}", {"alpha": alpha, "x": x, "y": y}))
    return out


def expected(case: api.Case, ctx: api.Context) -> np.ndarray:
    a = case.args
    return a["alpha"] * a["x"].astype(np.float64) + a["y"]


def run(fn: Any, case: api.Case, ctx: api.Context) -> np.ndarray:
    a = case.args
    since = kc.calls_so_far(ctx)
    got = kc.run_guarded(
        fn, [a["alpha"], a["x"], a["y"]], a["x"].shape, np.float32, names=("alpha", "x", "y")
    )
    why = grid_rule(ctx)
    if why:
        raise api.CheckError(why)
    # x, y and out: 3 accesses an element (on the emulator, kernel_checks.walker_rule)
    how = "the grid-stride loop shares it among the grid's threads (i += blockDim.x * gridDim.x)"
    kc.each_call(ctx, since, kc.walker_rule(a["x"].size, 3, how))
    return got


def compare(want: np.ndarray, got: Any, case: api.Case, ctx: api.Context) -> api.Mismatch | None:
    # one rounding for alpha * x (unless fused), one for the sum: a float32 result of values up
    # to ~4000 is off by a few units in the last place of the larger term
    return kc.compare_guarded(want, got, rtol=1e-5, atol=1e-3)


def timing(fn: Any, ctx: api.Context) -> api.TimingSpec:
    import cupy as cp

    n = ctx.big(4, arrays=3)

    def setup(i: int) -> tuple:
        rng = kc.device_rng(ctx, i)
        x, y = rng.random(n, dtype=cp.float32), rng.random(n, dtype=cp.float32)
        return 2.5, x, y, cp.empty_like(x)

    def library(io: tuple) -> None:
        alpha, x, y, out = io
        out[...] = np.float32(alpha) * x + y

    spec = kc.spec(
        fn,
        setup,
        library,
        "alpha * x + y (CuPy)",
        12 * n,
        note="8 bytes read + 4 written per element",
    )
    output_check = spec.check_call

    def check_call(io: tuple, returned: Any) -> Any:  # the timed calls keep the grid fixed too
        return grid_rule(ctx) or output_check(io, returned)

    spec.check_call = check_call
    return spec
