"""Check for triton-vector-add: out = x + y, written as a Triton kernel.

On a GPU the kernel is compiled and timed against the device's copy ceiling beside torch.add.
Without one Triton's interpreter runs it (correctness only, no speed grade; see
gpulab.exercises.triton_checks).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from gpulab.exercises import api
from gpulab.exercises import kernel_checks as kc
from gpulab.exercises import triton_checks as tc

ENTRY = "add"
OWN_KERNEL = True  # the work must be done by a Triton kernel of the learner's file
ALLOW = tc.ALLOW  # allocation, views and launches: your kernel does the work

CPU_BIG = 100_003  # the interpreter runs every program in Python: a large case stays small


def cases(ctx: api.Context) -> list[api.Case]:
    interpret = tc.use_interpreter(ctx)
    big = CPU_BIG if interpret else ctx.big(4, arrays=3)
    out = []
    # Sizes that are no multiple of any power-of-two block: a missing mask writes past the end
    for n in [*api.EDGE_SIZES, 4097, big]:
        x, y = (ctx.rng.uniform(-1000, 1000, n).astype(np.float32) for _ in range(2))
        out.append(api.Case(f"n={n}", {"x": x, "y": y}))
    return out


def expected(case: api.Case, ctx: api.Context) -> np.ndarray:
    return case.args["x"].astype(np.float64) + case.args["y"]


def run(fn: Any, case: api.Case, ctx: api.Context) -> np.ndarray:
    x, y = case.args["x"], case.args["y"]
    return tc.run_guarded(fn, [x, y], x.shape, np.float32, ctx.device, names=("x", "y"))


def compare(want: np.ndarray, got: Any, case: api.Case, ctx: api.Context) -> api.Mismatch | None:
    return kc.compare_guarded(want, got)


def untimed(ctx: api.Context) -> str:
    return tc.untimed(ctx)


def timed_n(ctx: api.Context) -> int:
    """4x the kernel track's timed size (1 GiB moved per call on a GPU): a Triton launch costs
    the host tens of microseconds (the launcher binds and specialises its arguments in Python),
    which at 256 MiB (about 65 us of memory time on an H200) would be a third of the figure."""
    return min(4 * ctx.big(4, arrays=3), 1 << 28)


def timing(fn: Any, ctx: api.Context) -> api.TimingSpec | None:
    if not ctx.gpu:
        return None
    import torch

    n = timed_n(ctx)

    def setup(i: int) -> tuple:
        g = torch.Generator(device=ctx.device).manual_seed(ctx.seed * 1000 + i)
        x = torch.rand(n, device=ctx.device, generator=g)
        y = torch.rand(n, device=ctx.device, generator=g)
        return x, y, torch.empty_like(x)

    def library(io: tuple) -> None:
        torch.add(io[0], io[1], out=io[2])

    return tc.spec(
        fn, setup, library, "torch.add", 12 * n, note="8 bytes read + 4 written per element"
    )
