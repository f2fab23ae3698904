"""Check for softmax-rows: a numerically stable softmax along each row."""

from __future__ import annotations

from typing import Any

import numpy as np

from gpulab.exercises import api
from gpulab.exercises import kernel_checks as kc

ENTRY = "softmax"
OWN_KERNEL = "raw"  # the work must be done by a RawKernel the learner's file compiles

COLS = 4096


def cases(ctx: api.Context) -> list[api.Case]:
    out = []
    for r, c in [(1, 1), (1, 2), (2, 31), (33, 33), (3, 1023), (5, 1025), (7, 4099)]:
        x = ctx.rng.uniform(-10, 10, (r, c)).astype(np.float32)
        out.append(api.Case(f"{r}x{c}", {"x": x}))
    hot = ctx.rng.uniform(80, 100, (2, 1000)).astype(np.float32)
    out.append(api.Case("2x1000, values 80..100 (exp overflows float32)", {"x": hot}))
    wide = ctx.rng.uniform(-1000, 1000, (4, 300)).astype(np.float32)
    out.append(api.Case("4x300, values -1000..1000", {"x": wide}))
    # Rows far apart: subtracting the largest value of the whole matrix instead of each row's
    # own max underflows every row but the top one to exp(...) = 0, and 0 / 0 is NaN.
    offsets = np.array([-3000, -100, 0, 50, 800, 2000], dtype=np.float32)[ctx.rng.permutation(6)]
    apart = ctx.rng.uniform(-5, 5, (6, 257)).astype(np.float32) + offsets[:, None]
    out.append(api.Case("6x257, each row at its own offset, -3000 to 2000", {"x": apart}))
    rows = max(1, ctx.big(4, arrays=2) // COLS)
    out.append(
        api.Case(f"{rows}x{COLS}", {"x": ctx.rng.standard_normal((rows, COLS)).astype(np.float32)})
    )
    return out


def expected(case: api.Case, ctx: api.Context) -> np.ndarray:
    x = case.args["x"].astype(np.float64)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def run(fn: Any, case: api.Case, ctx: api.Context) -> np.ndarray:
    x = case.args["x"]
    return kc.run_guarded(fn, [x], x.shape, np.float32, repeats=kc.repeats(ctx, x.size))


def compare(want: np.ndarray, got: Any, case: api.Case, ctx: api.Context) -> api.Mismatch | None:
    return kc.compare_guarded(want, got, rtol=2e-4, atol=1e-7)


def timing(fn: Any, ctx: api.Context) -> api.TimingSpec:
    import cupy as cp

    rows = max(1, ctx.big(4, arrays=2) // COLS)

    def setup(i: int) -> tuple:
        x = kc.device_rng(ctx, i).standard_normal((rows, COLS), dtype=cp.float32)
        return x, cp.empty_like(x)

    def library(io: tuple) -> None:
        e = cp.exp(io[0] - io[0].max(axis=1, keepdims=True))
        cp.divide(e, e.sum(axis=1, keepdims=True), out=io[1])

    return kc.spec(
        fn,
        setup,
        library,
        "CuPy: max, exp, sum, divide",
        8 * rows * COLS,
        note="4 bytes read + 4 written per element",
    )
