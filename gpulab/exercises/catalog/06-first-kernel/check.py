"""Check for first-kernel: saxpy (out = a * x + y) as a CuPy RawKernel.

The kernel track's conventions (gpulab/exercises/kernel_checks.py): `out` is a view in the middle
of a larger poisoned buffer, so an element the kernel never writes stays NaN and a write before
its start or past its end (no bounds check) changes a guard; x and y sit in guarded buffers too,
and must be unchanged after every call. Every timed call is checked as well. `y` has the sign of
`a * x`, so no case depends on whether the compiler fused the multiply and the add (FMA): that is
not what this exercise is about.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from gpulab.exercises import api
from gpulab.exercises import kernel_checks as kc

ENTRY = "saxpy"
# the work must be done by a RawKernel of the learner's: its index, guard and grid are the lesson
OWN_KERNEL = ("RawKernel", "RawModule")


def _inputs(rng: np.random.Generator, n: int) -> dict[str, Any]:
    a = float(np.float32(rng.uniform(0.5, 4.0) * rng.choice([-1.0, 1.0])))
    # 0.001 to 10,000, never zero; drawn in float32 (a float64 power over millions costs seconds)
    mag = np.power(np.float32(10.0), rng.random((2, n), dtype=np.float32) * 7 - 3)
    sign = (rng.integers(0, 2, n, dtype=np.int8) * 2 - 1).astype(np.float32)
    x = mag[0] * sign
    y = mag[1] * (sign if a > 0 else -sign)
    return {"a": a, "x": x, "y": y}


def cases(ctx: api.Context) -> list[api.Case]:
    sizes = [*api.EDGE_SIZES, 256 * 40 + 17, ctx.big(4, arrays=3)]
    out = []
    for n in sizes:
        note = ""
        if n == sizes[-1]:
            note = " (fills the device)"
        elif n > 1 and n % 256:
            note = " (not a multiple of the block size)"
        out.append(api.Case(f"n={n}{note}", _inputs(ctx.rng, n)))
    return out


def expected(case: api.Case, ctx: api.Context) -> np.ndarray:
    a = case.args["a"]
    return a * case.args["x"].astype(np.float64) + case.args["y"].astype(np.float64)


def run(fn: Any, case: api.Case, ctx: api.Context) -> np.ndarray:
    a = case.args
    inputs = [a["a"], a["x"], a["y"]]
    return kc.run_guarded(fn, inputs, a["x"].shape, np.float32, names=("a", "x", "y"))


def compare(want: np.ndarray, got: Any, case: api.Case, ctx: api.Context) -> api.Mismatch | None:
    return kc.compare_guarded(want, got)  # float32's tolerance against the float64 reference


def timing(fn: Any, ctx: api.Context) -> api.TimingSpec:
    import cupy as cp

    # One fused kernel, as CuPy's idiom for a custom element-wise expression.
    lib = cp.ElementwiseKernel(
        "float32 a, float32 x, float32 y", "float32 out", "out = a * x + y", "gpulab_saxpy"
    )
    n = ctx.big(4, arrays=3)

    def setup(i: int) -> tuple:
        g = kc.device_rng(ctx, i)
        x = g.random(n, dtype=cp.float32) + np.float32(0.5)
        y = g.random(n, dtype=cp.float32) + np.float32(0.5)
        return 2.5, x, y, cp.empty_like(x)

    def library(io: tuple) -> None:
        a, x, y, out = io
        lib(np.float32(a), x, y, out)

    # positive operands: fused or not, within 2 ulp of the library's answer
    return kc.spec(
        fn,
        setup,
        library,
        "cupy.ElementwiseKernel (out = a * x + y)",
        12 * n,
        note=f"n={n:,} float32: x and y read, out written",
    )
