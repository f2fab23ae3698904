"""Check for triton-affine-clamp: out = clamp(x * scale[col] + bias[col], lo, hi), one Triton
kernel over a (rows, cols) matrix, the launch the learner's own.

The lesson's vector add shows program ids, offsets and a mask on one flat array. Here the same
pieces meet a second index: each element's column (its offset modulo the width), which picks the
scale and bias it is multiplied and shifted by, and a clamp, fused into the one pass. The widths
are no powers of two and the sizes no multiples of a block, so the last program's lanes run past
the end; scale and bias sit in guarded buffers, so a column computed from the flat offset (no
modulo) reads the guard.

On a GPU the kernel is compiled and timed against the device's copy ceiling beside the library's
two kernels (addcmul, then clamp). Without one Triton's interpreter runs it (correctness only,
no speed grade; see gpulab.exercises.triton_checks).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from gpulab.exercises import api
from gpulab.exercises import kernel_checks as kc
from gpulab.exercises import triton_checks as tc

ENTRY = "affine_clamp"
OWN_KERNEL = True  # the work must be done by a Triton kernel of the learner's file
ALLOW = tc.ALLOW  # allocation, views and launches: your kernel does the work

COLS = 1000  # the timed and the large matrices' width: no power of two
CPU_BIG = 100_003  # the interpreter runs every program in Python: a large case stays small
# (rows, cols): a lone element, widths around a warp and a block, one column, one long row
SHAPES = [(1, 1), (1, 2), (2, 31), (33, 33), (3, 1023), (5, 1025), (4097, 1), (1, 4097)]


def _case(ctx: api.Context, rows: int, cols: int) -> api.Case:
    rng = ctx.rng
    x = rng.uniform(-4, 4, (rows, cols)).astype(np.float32)
    # scales of both signs (a negative one flips which bound a value meets), never near zero
    scale = (rng.uniform(0.5, 2.0, cols) * rng.choice([-1.0, 1.0], cols)).astype(np.float32)
    bias = rng.uniform(-1.5, 1.5, cols).astype(np.float32)
    lo = float(np.float32(rng.uniform(-3.0, -1.0)))
    hi = float(np.float32(rng.uniform(1.0, 3.0)))
    return api.Case(
        f"{rows}x{cols}, clamp to [{lo:.3g}, {hi:.3g}]",
        {"x": x, "scale": scale, "bias": bias, "lo": lo, "hi": hi},
    )


def cases(ctx: api.Context) -> list[api.Case]:
    interpret = tc.use_interpreter(ctx)
    big = CPU_BIG if interpret else ctx.big(4, arrays=2)
    return [_case(ctx, r, c) for r, c in SHAPES] + [_case(ctx, max(1, big // COLS), COLS)]


def expected(case: api.Case, ctx: api.Context) -> np.ndarray:
    a = case.args
    y = a["x"].astype(np.float64) * a["scale"] + a["bias"]
    return np.clip(y, a["lo"], a["hi"])


def run(fn: Any, case: api.Case, ctx: api.Context) -> np.ndarray:
    a = case.args
    lo, hi = a["lo"], a["hi"]

    def call(x: Any, scale: Any, bias: Any, out: Any) -> None:
        fn(x, scale, bias, lo, hi, out)

    got = tc.run_guarded(
        call,
        [a["x"], a["scale"], a["bias"]],
        a["x"].shape,
        np.float32,
        ctx.device,
        names=("x", "scale", "bias"),
    )
    tc.one_kernel(ctx.watch, "the affine and the clamp")
    return got


def compare(want: np.ndarray, got: Any, case: api.Case, ctx: api.Context) -> api.Mismatch | None:
    # a multiply and an add in float32 against float64: a few ulps
    return kc.compare_guarded(want, got, rtol=1e-5, atol=1e-6)


def untimed(ctx: api.Context) -> str:
    return tc.untimed(ctx)


def timed_rows(ctx: api.Context) -> int:
    """4x the kernel track's timed size (1 GiB moved per call on a GPU): a Triton launch costs
    the host tens of microseconds (the launcher binds and specialises its arguments in Python),
    which at 256 MiB would be a visible share of the figure."""
    return max(1, min(4 * ctx.big(4, arrays=2), 1 << 28) // COLS)


def timing(fn: Any, ctx: api.Context) -> api.TimingSpec | None:
    if not ctx.gpu:
        return None
    import torch

    rows = timed_rows(ctx)
    lo, hi = -1.5, 1.5

    def setup(i: int) -> tuple:
        g = torch.Generator(device=ctx.device).manual_seed(ctx.seed * 1000 + i)
        x = torch.randn(rows, COLS, device=ctx.device, generator=g) * 2
        scale = torch.rand(COLS, device=ctx.device, generator=g) + 0.5
        bias = torch.rand(COLS, device=ctx.device, generator=g) - 0.5
        return x, scale, bias, lo, hi, torch.empty_like(x)

    def library(io: tuple) -> None:
        x, scale, bias, low, high, out = io
        torch.addcmul(bias, x, scale, out=out)
        out.clamp_(low, high)

    return tc.spec(
        fn,
        setup,
        library,
        "torch.addcmul + clamp_",
        8 * rows * COLS,
        note="4 bytes read + 4 written per element (scale and bias stay in cache)",
        rtol=1e-5,
        atol=1e-6,
    )
