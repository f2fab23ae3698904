"""Check for triton-causal-softmax: the softmax inside causal attention, as one Triton kernel.

For scores x of shape (batch, T, T), row i of each matrix is softmaxed over its first i + 1
columns after scaling by `scale`; the columns after i (the future, in a decoder) are 0. The
lesson's row softmax shows the fused kernel on a whole row; here the mask depends on the row, so
what the masked lanes load (their `other=`) decides the max and the sum again, and the lanes
past the diagonal must still be stored, as zeros. The row's position is its index modulo T: the
batch's matrices are stacked.

On a GPU the kernel is compiled and timed beside the library path (scale, masked_fill,
torch.softmax). Without one Triton's interpreter runs it (correctness only, no speed grade).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from gpulab.exercises import api
from gpulab.exercises import kernel_checks as kc
from gpulab.exercises import triton_checks as tc

ENTRY = "causal_softmax"
OWN_KERNEL = True  # the work must be done by a Triton kernel of the learner's file
ALLOW = tc.ALLOW  # allocation, views and launches: your kernel does the work

T_TIMED = 2048  # the timed matrices: one program a row, the whole row in registers


def _case(name: str, x: np.ndarray, scale: float) -> api.Case:
    return api.Case(f"{name}, scale {scale:.3g}", {"x": x, "scale": scale})


def cases(ctx: api.Context) -> list[api.Case]:
    interpret = tc.use_interpreter(ctx)
    rng = ctx.rng
    out = []
    # (batch, T): one element; widths around a warp and a block, no power of two; several
    # matrices stacked, so a row's position must be taken modulo T
    # past a block of 1024 on a GPU; Triton's interpreter runs a program at a time, and a row
    # walked in blocks costs it ~T^2 steps a matrix, so there past 512 (seconds, not a minute)
    wide = 520 if interpret else 1025
    # there a matrix at a time past 256 too: the small ones below already stack matrices
    stack = 1 if interpret else 2
    for b, t in [(1, 1), (1, 2), (2, 31), (3, 33), (1, 100), (stack, 257), (1, wide)]:
        d = int(rng.choice([16, 64, 128]))
        x = rng.uniform(-10, 10, (b, t, t)).astype(np.float32)
        out.append(_case(f"{b}x{t}x{t}", x, float(np.float32(1 / np.sqrt(d)))))
    hot = rng.uniform(80, 100, (2, 40, 40)).astype(np.float32)
    out.append(_case("2x40x40, values 80..100 (exp overflows float32)", hot, 1.0))
    # Each row's first score far below its diagonal's: shifted by anything but the row's max
    # (a red team shifted by the first score) exp overflows to inf, and inf/inf is NaN
    low_first = rng.uniform(-5, 5, (2, 24, 24)).astype(np.float32)
    low_first[:, :, 0] = -100.0
    rows = np.arange(1, 24)
    low_first[:, rows, rows] = 100.0
    out.append(_case("2x24x24, each row's first score -100 and its diagonal 100", low_first, 1.0))
    # Rows far apart: a padding value that leaks, or a max shared between rows, shows
    offsets = rng.permutation(np.array([-3000, -100, 0, 50, 800, 2000] * 2, dtype=np.float32))
    apart = rng.uniform(-5, 5, (1, 12, 12)).astype(np.float32) + offsets[None, :, None]
    out.append(_case("1x12x12, each row at its own offset, -3000 to 2000", apart, 1.0))
    t = 256 if interpret else 1024
    b = 1 if interpret else max(1, ctx.big(4, arrays=2) // (t * t))
    big = rng.standard_normal((b, t, t)).astype(np.float32)
    out.append(_case(f"{b}x{t}x{t}", big, float(np.float32(1 / np.sqrt(64)))))
    return out


def expected(case: api.Case, ctx: api.Context) -> np.ndarray:
    x = case.args["x"].astype(np.float64) * case.args["scale"]
    t = x.shape[-1]
    future = np.triu(np.ones((t, t), dtype=bool), k=1)  # column j > row i
    x = np.where(future, -np.inf, x)
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def run(fn: Any, case: api.Case, ctx: api.Context) -> np.ndarray:
    x, scale = case.args["x"], case.args["scale"]

    def call(x_dev: Any, out: Any) -> None:
        fn(x_dev, scale, out)

    got = tc.run_guarded(call, [x], x.shape, np.float32, ctx.device, names=("x",))
    tc.one_kernel(ctx.watch, "the scale, the mask and the softmax")
    return got


def compare(want: np.ndarray, got: Any, case: api.Case, ctx: api.Context) -> api.Mismatch | None:
    # 2e-4 relative: exp of a float32 difference that was itself rounded; the zeros exact
    return kc.compare_guarded(want, got, rtol=2e-4, atol=1e-7)


def untimed(ctx: api.Context) -> str:
    return tc.untimed(ctx)


def timed_batch(ctx: api.Context) -> int:
    """4x the kernel track's timed size (2 GiB of scores and outputs per call on a GPU): a Triton
    launch costs the host tens of microseconds, a visible share of the figure at 256 MiB."""
    return max(1, 4 * ctx.big(4, arrays=2) // (T_TIMED * T_TIMED))


def bytes_moved(batch: int, t: int) -> int:
    """What one call must move: each row's first i + 1 scores read (the rest is masked, never
    loaded), every output written."""
    return 4 * batch * (t * (t + 1) // 2 + t * t)


def timing(fn: Any, ctx: api.Context) -> api.TimingSpec | None:
    if not ctx.gpu:
        return None
    import torch

    batch, t = timed_batch(ctx), T_TIMED
    scale = 1 / 8.0
    future = torch.ones(t, t, dtype=torch.bool, device=ctx.device).triu(1)

    def setup(i: int) -> tuple:
        g = torch.Generator(device=ctx.device).manual_seed(ctx.seed * 1000 + i)
        x = torch.randn(batch, t, t, device=ctx.device, generator=g)
        return x, scale, torch.empty_like(x)

    def library(io: tuple) -> Any:
        return torch.softmax((io[0] * io[1]).masked_fill(future, float("-inf")), dim=-1)

    return tc.spec(
        fn,
        setup,
        library,
        "torch.softmax after masked_fill",
        bytes_moved(batch, t),
        note="the scores on and below the diagonal read, every output written",
        rtol=2e-4,
        atol=1e-7,
    )
