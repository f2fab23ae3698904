"""Check for conv1d: out[i] = sum_k w[k] * x[i + k - R], zeros outside, exact on whole numbers."""

from __future__ import annotations

from typing import Any

import numpy as np

from gpulab.exercises import api
from gpulab.exercises import kernel_checks as kc

ENTRY = "conv1d"
OWN_KERNEL = True  # the work must be done by a kernel the learner's file compiles
# A correct kernel none of whose launches uses shared memory fails with this reason.
SHARED_MEMORY = (
    "this exercise is the tile: load the block's values, the halo and the weights into "
    "__shared__ arrays once, then sum from them"
)

TIMED_K = 7


def cases(ctx: api.Context) -> list[api.Case]:
    sizes = [*api.EDGE_SIZES, ctx.big(4, arrays=2)]
    widths = [1, 3, 63, 7, 31, 63, 15]
    out = []
    for n, k in zip(sizes, widths, strict=True):
        x = kc.nonzero_ints(ctx.rng, -100, 100, n).astype(np.float32)
        w = kc.nonzero_ints(ctx.rng, -4, 4, k).astype(np.float32)
        out.append(api.Case(f"n={n}, K={k}", {"x": x, "w": w}))
    return out


def expected(case: api.Case, ctx: api.Context) -> np.ndarray:
    # Whole numbers: |x| <= 100, |w| <= 4, K <= 63, so every partial sum stays under 2^24 and
    # float32 holds it exactly. In float32 and in place, the 8M-element reference takes a third
    # of the float64 version's time (0.28 s of a 0.62 s check on an H100 host)
    x, w = case.args["x"], case.args["w"]
    n, r = x.size, (w.size - 1) // 2
    padded = np.zeros(n + 2 * r, dtype=np.float32)
    padded[r : r + n] = x
    out = np.zeros(n, dtype=np.float32)
    term = np.empty(n, dtype=np.float32)
    for k in range(w.size):
        np.multiply(padded[k : k + n], w[k], out=term)
        out += term
    return out


def run(fn: Any, case: api.Case, ctx: api.Context) -> np.ndarray:
    x, w = case.args["x"], case.args["w"]
    since = kc.calls_so_far(ctx)
    spans: list[list[int]] = []
    got = kc.run_guarded(
        fn, [x, w], x.shape, np.float32, repeats=kc.repeats(ctx, x.size), spans=spans
    )
    # each output's K products read x from the tile (and w from shared memory or registers):
    # about K shared reads an output, K / 4 where a thread slides a window over several
    # outputs; asked at K / 16, which a kernel sharing one value (about 1 an output) or staging
    # only its results through shared memory (2 an output) stays under once K > 32
    n, k = x.size, w.size
    what = f"{n:,} outputs of {k} products"
    kc.each_call(ctx, since, kc.tile_traffic_rule(n * k // 16, what))
    # x from its tile: each value loaded about once (the halo adds 2R a block); four loads an
    # output at most, through any array but w (which a thread may read at every product).
    # Tiling w alone and reading x (or a copy of it) at every product loads K an output. Asked
    # where K and the array leave room: a 33-element array's halo is most of it
    if k >= 7 and n >= 1024:
        kc.each_call(ctx, since, kc.input_reads_rule(spans[1], 4 * n * x.itemsize, what))
    return got


def compare(want: np.ndarray, got: Any, case: api.Case, ctx: api.Context) -> api.Mismatch | None:
    return kc.compare_guarded(want, got, rtol=0.0, atol=0.5)  # whole numbers: exact


def timing(fn: Any, ctx: api.Context) -> api.TimingSpec:
    import cupy as cp
    import cupyx.scipy.ndimage as ndi

    n = ctx.big(4, arrays=2)
    w = cp.asarray(np.array([1, -2, 3, 4, 3, -2, 1], dtype=np.float32))

    def setup(i: int) -> tuple:
        x = kc.device_rng(ctx, i).random(n, dtype=cp.float32)
        return x, w, cp.empty_like(x)

    def library(io: tuple) -> None:
        ndi.correlate1d(io[0], io[1], mode="constant", cval=0.0, output=io[2])

    return kc.spec(
        fn,
        setup,
        library,
        "cupyx.scipy.ndimage.correlate1d",
        8 * n,
        note=f"4 bytes read + 4 written per element, K = {TIMED_K}",
    )
