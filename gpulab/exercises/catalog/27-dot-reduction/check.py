"""Check for dot-reduction: out[0] = sum(a * b), exact on whole-number inputs."""

from __future__ import annotations

from typing import Any

import numpy as np

from gpulab.exercises import api
from gpulab.exercises import kernel_checks as kc

ENTRY = "dot"
OWN_KERNEL = "raw"  # the work must be done by a RawKernel the learner's file compiles


def cases(ctx: api.Context) -> list[api.Case]:
    out = []
    for n in [*api.EDGE_SIZES, ctx.big(4, arrays=2)]:
        a, b = (kc.nonzero_ints(ctx.rng, -4, 4, n).astype(np.float32) for _ in range(2))
        out.append(api.Case(f"n={n}", {"a": a, "b": b}))
    return out


def expected(case: api.Case, ctx: api.Context) -> np.ndarray:
    a, b = (case.args[k].astype(np.int64) for k in ("a", "b"))
    return np.array([float(np.dot(a, b))])


def run(fn: Any, case: api.Case, ctx: api.Context) -> np.ndarray:
    a, b = case.args["a"], case.args["b"]
    since = kc.calls_so_far(ctx)
    got = kc.run_guarded(fn, [a, b], (1,), np.float32, repeats=kc.repeats(ctx, a.size))
    # a <<<1, 1>>> loop over the arrays is a CPU loop on the GPU (a red team's passed on the
    # emulator): the work shared out among threads, as scan's and histogram's
    kc.each_call(ctx, since, kc.parallel_rule(a.size))
    return got


def compare(want: np.ndarray, got: Any, case: api.Case, ctx: api.Context) -> api.Mismatch | None:
    return kc.compare_guarded(want, got, rtol=0.0, atol=0.5)  # whole numbers: exact


def timing(fn: Any, ctx: api.Context) -> api.TimingSpec:
    import cupy as cp

    n = ctx.big(4, arrays=2)

    def setup(i: int) -> tuple:
        rng = kc.device_rng(ctx, i)
        a, b = rng.random(n, dtype=cp.float32), rng.random(n, dtype=cp.float32)
        return a, b, cp.empty(1, dtype=cp.float32)

    def library(io: tuple) -> None:
        io[2][...] = cp.dot(io[0], io[1])

    return kc.spec(fn, setup, library, "cupy.dot (cuBLAS)", 8 * n, note="8 bytes read per element")
