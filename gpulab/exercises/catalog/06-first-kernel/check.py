"""Check for first-kernel: saxpy (out = a * x + y) as a CuPy RawKernel.

`out` is a view at the front of a larger poisoned buffer: an element the kernel never writes
stays NaN, and a thread that writes past the end (no bounds check) changes the guard elements
behind it, which the check sees. `y` has the sign of `a * x`, so no case depends on whether the
compiler fused the multiply and the add (FMA): that is not what this exercise is about.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from gpulab.exercises import api

ENTRY = "saxpy"
OWN_KERNEL = True  # the work must be done by a kernel the learner's file compiles

GUARD = 4096  # poisoned elements behind `out`: more than any block size can overrun


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
    import cupy as cp

    n = case.args["x"].size
    with cp.cuda.Device(ctx.device_index):
        x = cp.asarray(case.args["x"])
        y = cp.asarray(case.args["y"])
        buf = api.poison(n + GUARD, np.float32, xp=cp)
        out = buf[:n]
        fn(case.args["a"], x, y, out)
        cp.cuda.Device().synchronize()  # a launch error or a bad address surfaces here
        if not bool(cp.isnan(buf[n:]).all()):
            past = int(cp.argmax(~cp.isnan(buf[n:])))
            raise api.CheckError(
                f"the kernel wrote past the end of out (at out[{n + past}], n={n}): "
                "a thread with i >= n must not write (bounds check)"
            )
        if not (
            cp.array_equal(x, cp.asarray(case.args["x"]))
            and cp.array_equal(y, cp.asarray(case.args["y"]))
        ):
            raise api.CheckError("saxpy changed x or y: write only into out")
        return cp.asnumpy(out)


def compare(
    want: np.ndarray, got: np.ndarray, case: api.Case, ctx: api.Context
) -> api.Mismatch | None:
    return api.compare_arrays(want, got, dtype=np.float32)


_LIBRARY = None


def timing(fn: Any, ctx: api.Context) -> api.TimingSpec:
    import cupy as cp

    global _LIBRARY
    if _LIBRARY is None:
        # One fused kernel, as CuPy's idiom for a custom element-wise expression.
        _LIBRARY = cp.ElementwiseKernel(
            "float32 a, float32 x, float32 y", "float32 out", "out = a * x + y", "gpulab_saxpy"
        )
    lib = _LIBRARY
    n = ctx.big(4, arrays=3)
    a = 2.5

    def setup(i: int) -> Any:
        with cp.cuda.Device(ctx.device_index):
            g = cp.random.default_rng(ctx.seed + i)
            x = g.random(n, dtype=cp.float32) + 0.5
            y = g.random(n, dtype=cp.float32) + 0.5
            return x, y, cp.full(n, cp.nan, dtype=cp.float32)

    def verify(inputs: Any) -> str | None:
        x, y, out = inputs
        want = a * x + y  # positive operands: fused or not, within 2 ulp
        if not bool(cp.all(cp.abs(out - want) <= 1e-6 * cp.abs(want))):
            return "out does not hold a * x + y after the timed calls"
        return None

    return api.TimingSpec(
        setup=setup,
        learner=lambda s: fn(a, *s),
        library=lambda s: lib(np.float32(a), s[0], s[1], s[2]),
        library_name="cupy.ElementwiseKernel (out = a * x + y)",
        work=3 * 4.0 * n,
        metric="GB/s",
        ceiling="copy",
        sync="cupy",
        note=f"n={n:,} float32: x and y read, out written",
        verify=verify,
    )
