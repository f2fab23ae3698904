"""Check for map-add-ten: out[i] = a[i] + 10."""

from __future__ import annotations

from typing import Any

import numpy as np

from gpulab.exercises import api
from gpulab.exercises import kernel_checks as kc

ENTRY = "add_ten"
OWN_KERNEL = True  # the work must be done by a kernel the learner's file compiles


def cases(ctx: api.Context) -> list[api.Case]:
    sizes = [*api.EDGE_SIZES, ctx.big(4, arrays=2)]
    return [
        api.Case(f"n={n}", {"a": ctx.rng.uniform(-1000, 1000, n).astype(np.float32)}) for n in sizes
    ]


def expected(case: api.Case, ctx: api.Context) -> np.ndarray:
    return case.args["a"].astype(np.float64) + 10.0


def run(fn: Any, case: api.Case, ctx: api.Context) -> np.ndarray:
    a = case.args["a"]
    since = kc.calls_so_far(ctx)
    got = kc.run_guarded(fn, [a], a.shape, np.float32)
    # a read and a write an element (on the emulator)
    how = "a thread an element, or a few"
    kc.each_call(ctx, since, kc.walker_rule(a.size, 2, how))
    return got


def compare(want: np.ndarray, got: Any, case: api.Case, ctx: api.Context) -> api.Mismatch | None:
    return kc.compare_guarded(want, got)


def timing(fn: Any, ctx: api.Context) -> api.TimingSpec:
    import cupy as cp

    n = ctx.big(4, arrays=2)

    def setup(i: int) -> tuple:
        a = kc.device_rng(ctx, i).random(n, dtype=cp.float32)
        return a, cp.empty_like(a)

    return kc.spec(
        fn,
        setup,
        lambda io: cp.add(io[0], np.float32(10), out=io[1]),
        "cupy.add",
        8 * n,
        note="4 bytes read + 4 written per element",
    )
