"""Check for grid-stride: out = alpha * x + y with a grid that does not grow with n."""

from __future__ import annotations

from typing import Any

import numpy as np

from gpulab.exercises import api
from gpulab.exercises import kernel_checks as kc

ENTRY = "saxpy"
OWN_KERNEL = True  # the work must be done by a kernel the learner's file compiles


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
    return kc.run_guarded(fn, [a["alpha"], a["x"], a["y"]], a["x"].shape, np.float32)


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

    return kc.spec(
        fn,
        setup,
        library,
        "alpha * x + y (CuPy)",
        12 * n,
        note="8 bytes read + 4 written per element",
    )
