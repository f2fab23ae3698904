"""Check for guards: a leaky ReLU over lengths that are not a multiple of the block."""

from __future__ import annotations

from typing import Any

import numpy as np

from gpulab.exercises import api
from gpulab.exercises import kernel_checks as kc

ENTRY = "leaky_relu"
OWN_KERNEL = True  # the work must be done by a kernel the learner's file compiles


def cases(ctx: api.Context) -> list[api.Case]:
    sizes = [*api.EDGE_SIZES, 256 * 4, ctx.big(4, arrays=2) + 77]
    out = []
    for n in sizes:
        a = ctx.rng.uniform(-1000, 1000, n).astype(np.float32)
        note = " (a multiple of 256)" if n % 256 == 0 else ""
        out.append(api.Case(f"n={n}{note}", {"a": a}))
    return out


def expected(case: api.Case, ctx: api.Context) -> np.ndarray:
    a = case.args["a"].astype(np.float64)
    # 0.01f is not 0.01: the reference multiplies by the float32 constant the kernel uses
    return np.where(a > 0, a, a * float(np.float32(0.01)))


def run(fn: Any, case: api.Case, ctx: api.Context) -> np.ndarray:
    since = kc.calls_so_far(ctx)
    got = kc.run_guarded(fn, [case.args["a"]], case.args["a"].shape, np.float32)
    kc.each_call(ctx, since, _whole_warps)
    # a read and a write an element (on the emulator): one thread
    # looping to n needs no guard and no rounding up
    how = "round the blocks up and let the spare threads do nothing (if (i < n))"
    kc.each_call(ctx, since, kc.walker_rule(case.args["a"].size, 2, how))
    try:
        kc.each_call(ctx, since, kc.written_once_rule(case.args["a"].nbytes))
    except api.CheckError:
        # a write past the end or a wrong element is the mistake to name, not the count
        if kc.compare_guarded(expected(case, ctx), got) is None:
            raise
    return got


def _whole_warps(launches: list[Any]) -> str | None:
    """A block of whole warps: a GPU runs a block's threads 32 at a time, so a block sized to
    divide n (205 threads for n = 1025) wastes lanes and dodges the guard this step teaches."""
    for la in launches:
        threads = kc.block_threads(la)
        if la.block is not None and threads % 32:
            return (
                f"your block of {threads} thread{'s' if threads != 1 else ''} is not a whole number of warps (32 threads): "
                "a GPU runs a block 32 threads at a time; keep the block a multiple of 32 and let "
                "the threads past n do nothing (if (i < n))"
            )
    return None


def compare(want: np.ndarray, got: Any, case: api.Case, ctx: api.Context) -> api.Mismatch | None:
    return kc.compare_guarded(want, got)


def timing(fn: Any, ctx: api.Context) -> api.TimingSpec:
    import cupy as cp

    n = ctx.big(4, arrays=2)

    def setup(i: int) -> tuple:
        a = kc.device_rng(ctx, i).standard_normal(n, dtype=cp.float32)
        return a, cp.empty_like(a)

    def library(io: tuple) -> None:
        a, out = io
        out[...] = cp.where(a > 0, a, a * np.float32(0.01))

    return kc.spec(
        fn, setup, library, "cupy.where", 8 * n, note="4 bytes read + 4 written per element"
    )
