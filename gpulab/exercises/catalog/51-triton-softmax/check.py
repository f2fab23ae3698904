"""Check for triton-softmax: a numerically stable softmax along each row, as a Triton kernel.

On a GPU the kernel is compiled and timed against the device's copy ceiling beside
torch.softmax. Without one Triton's interpreter runs it (correctness only, no speed grade).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from gpulab.exercises import api
from gpulab.exercises import kernel_checks as kc
from gpulab.exercises import triton_checks as tc

ENTRY = "softmax"
OWN_KERNEL = True  # the work must be done by a Triton kernel of the learner's file
ALLOW = tc.ALLOW  # allocation, views and launches: your kernel does the work

COLS = 4096  # the timed rows: one program each, the whole row in registers


def cases(ctx: api.Context) -> list[api.Case]:
    interpret = tc.use_interpreter(ctx)
    out = []
    for r, c in [(1, 1), (1, 2), (2, 31), (33, 33), (3, 1023), (5, 1025), (7, 4099)]:
        x = ctx.rng.uniform(-10, 10, (r, c)).astype(np.float32)
        out.append(api.Case(f"{r}x{c}", {"x": x}))
    hot = ctx.rng.uniform(80, 100, (2, 1000)).astype(np.float32)
    out.append(api.Case("2x1000, values 80..100 (exp overflows float32)", {"x": hot}))
    # Rows far apart: the masked lanes or a global max must not leak between rows
    offsets = np.array([-3000, -100, 0, 50, 800, 2000], dtype=np.float32)[ctx.rng.permutation(6)]
    apart = ctx.rng.uniform(-5, 5, (6, 257)).astype(np.float32) + offsets[:, None]
    out.append(api.Case("6x257, each row at its own offset, -3000 to 2000", {"x": apart}))
    rows = 64 if interpret else max(1, ctx.big(4, arrays=2) // COLS)
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
    return tc.run_guarded(fn, [x], x.shape, np.float32, ctx.device, names=("x",))


def compare(want: np.ndarray, got: Any, case: api.Case, ctx: api.Context) -> api.Mismatch | None:
    # 2e-4 relative: exp of a float32 difference that was itself rounded
    return kc.compare_guarded(want, got, rtol=2e-4, atol=1e-7)


def untimed(ctx: api.Context) -> str:
    return tc.untimed(ctx)


def timing(fn: Any, ctx: api.Context) -> api.TimingSpec | None:
    if not ctx.gpu:
        return None
    import torch

    # 4x the kernel track's timed size (2 GiB moved per call on a GPU): a Triton launch costs
    # the host tens of microseconds, a third of the figure at 256 MiB
    rows = max(1, 4 * ctx.big(4, arrays=2) // COLS)

    def setup(i: int) -> tuple:
        g = torch.Generator(device=ctx.device).manual_seed(ctx.seed * 1000 + i)
        x = torch.randn(rows, COLS, device=ctx.device, generator=g)
        return x, torch.empty_like(x)

    def library(io: tuple) -> Any:
        return torch.softmax(io[0], dim=1)

    return tc.spec(
        fn,
        setup,
        library,
        "torch.softmax",
        8 * rows * COLS,
        note="4 bytes read + 4 written per element",
        rtol=2e-4,
        atol=1e-7,
    )
