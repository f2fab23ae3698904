"""Check for histogram: 256 bins of int32 values, exact counts."""

from __future__ import annotations

from typing import Any

import numpy as np

from gpulab.exercises import api
from gpulab.exercises import kernel_checks as kc

ENTRY = "histogram"
OWN_KERNEL = True  # the work must be done by a kernel the learner's file compiles

BINS = 256


def cases(ctx: api.Context) -> list[api.Case]:
    out = [
        api.Case(f"n={n}", {"x": ctx.rng.integers(0, BINS, n).astype(np.int32)})
        for n in api.EDGE_SIZES
    ]
    skewed = np.where(ctx.rng.random(100_003) < 0.95, 7, ctx.rng.integers(0, BINS, 100_003))
    out.append(api.Case("n=100003, 95% of values are 7", {"x": skewed.astype(np.int32)}))
    n = ctx.big(4)
    out.append(api.Case(f"n={n}", {"x": ctx.rng.integers(0, BINS, n).astype(np.int32)}))
    return out


def expected(case: api.Case, ctx: api.Context) -> np.ndarray:
    return np.bincount(case.args["x"], minlength=BINS).astype(np.int32)


def run(fn: Any, case: api.Case, ctx: api.Context) -> np.ndarray:
    x = case.args["x"]
    since = kc.calls_so_far(ctx)
    got = kc.run_guarded(fn, [x], (BINS,), np.int32, repeats=kc.repeats(ctx, x.size))
    kc.each_call(ctx, since, kc.parallel_rule(x.size))
    return got


def compare(want: np.ndarray, got: Any, case: api.Case, ctx: api.Context) -> api.Mismatch | None:
    return kc.compare_guarded(want, got, name="hist")


def timing(fn: Any, ctx: api.Context) -> api.TimingSpec:
    import cupy as cp

    n = ctx.big(4)

    def setup(i: int) -> tuple:
        x = (kc.device_rng(ctx, i).random(n, dtype=cp.float32) * BINS).astype(cp.int32)
        return cp.minimum(x, BINS - 1), cp.empty(BINS, dtype=cp.int32)

    def library(io: tuple) -> None:
        io[1][...] = cp.bincount(io[0], minlength=BINS)

    return kc.spec(fn, setup, library, "cupy.bincount", 4 * n, note="4 bytes read per element")
