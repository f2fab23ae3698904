"""Check for matmul-tiled: out = a @ b in float32, tolerance scaled by K."""

from __future__ import annotations

from typing import Any

import numpy as np

from gpulab.exercises import api
from gpulab.exercises import kernel_checks as kc

ENTRY = "matmul"
OWN_KERNEL = True  # the work must be done by a kernel the learner's file compiles
# A correct kernel none of whose launches uses shared memory fails with this reason.
SHARED_MEMORY = (
    "this exercise is the tiles: stage tiles of a and b in __shared__ arrays and multiply "
    "from there"
)

TIMED = 4096  # M = N = K of the timed product: big enough for cuBLAS to reach its peak


def big_side(ctx: api.Context) -> int:
    # capped: the float64 reference is computed on the host before the check (a second at 2047)
    return min(1023, int(np.sqrt(ctx.big(4, arrays=3))) | 1)


def cases(ctx: api.Context) -> list[api.Case]:
    n = big_side(ctx)
    shapes = [
        (1, 1, 1),
        (2, 3, 5),
        (31, 33, 17),
        (33, 31, 65),
        (64, 64, 64),
        (65, 127, 33),
        (1, 1025, 1),
        (n, n + 2, n - 2),
    ]
    out = []
    for m, k, nn in shapes:
        a = ctx.rng.uniform(-1, 1, (m, k)).astype(np.float32)
        b = ctx.rng.uniform(-1, 1, (k, nn)).astype(np.float32)
        out.append(api.Case(f"M={m} K={k} N={nn}", {"a": a, "b": b}))
    return out


def expected(case: api.Case, ctx: api.Context) -> np.ndarray:
    return case.args["a"].astype(np.float64) @ case.args["b"].astype(np.float64)


def run(fn: Any, case: api.Case, ctx: api.Context) -> np.ndarray:
    a, b = case.args["a"], case.args["b"]
    reps = kc.repeats(ctx, a.shape[0] * b.shape[1])
    since = kc.calls_so_far(ctx)
    got = kc.run_guarded(fn, [a, b], (a.shape[0], b.shape[1]), np.float32, repeats=reps)
    # every output's K products read their two operands from tiles: 2K reads an output, fewer
    # where a thread keeps a row of the tile in registers for several outputs (the reference:
    # about K/2); asked at K/16, which a kernel holding one shared index (about 1 an output)
    # stays under once K > 16
    outputs, k = a.shape[0] * b.shape[1], a.shape[1]
    least = outputs * k // 16
    what = f"{outputs:,} outputs of {k} products"
    kc.each_call(ctx, since, kc.tile_traffic_rule(least, what))
    # 16 x 16 tiles load a's rows once a column of blocks and b's columns once a row of them;
    # four times that is the most: staging a tile and reading the product from global memory,
    # or tiling a alone and reading b at every use, loads half the naive kernel's 2K an output.
    # Asked where a tile has room to reuse: a small product's edge tiles (a kernel may load
    # them whole, clamped) are most of it
    m, n = a.shape[0], b.shape[1]
    if min(m, n, k) >= 64:
        tiled = (m * k * -(-n // 16) + k * n * -(-m // 16)) * a.itemsize
        kc.each_call(ctx, since, kc.global_reads_rule(4 * tiled, what))
    return got


def compare(want: np.ndarray, got: Any, case: api.Case, ctx: api.Context) -> api.Mismatch | None:
    # a float32 sum of K products of values in [-1, 1]: rounding grows with K, a lost product
    # (~0.3) does not hide in it
    k = case.args["a"].shape[1]
    return kc.compare_guarded(want, got, rtol=1e-5, atol=2e-6 * k)


def timing(fn: Any, ctx: api.Context) -> api.TimingSpec:
    import cupy as cp

    n = TIMED if not ctx.quick else 1024
    n = min(n, big_side(ctx) + 1) if ctx.fill_bytes < (64 << 20) else n

    def setup(i: int) -> tuple:
        rng = kc.device_rng(ctx, i)
        a = rng.random((n, n), dtype=cp.float32) - 0.5
        b = rng.random((n, n), dtype=cp.float32) - 0.5
        return a.astype(cp.float32), b.astype(cp.float32), cp.empty((n, n), dtype=cp.float32)

    def library(io: tuple) -> None:
        cp.matmul(io[0], io[1], out=io[2])

    return kc.spec(
        fn,
        setup,
        library,
        "cupy.matmul (cuBLAS fp32)",
        2 * n**3,
        metric="TFLOP/s",
        ceiling="matmul:fp32",
        sets=2,
        atol=2e-6 * n,
        note="2 * M * N * K operations",
    )
