"""Check for triton-matmul: out = a @ b, float16 inputs, float32 accumulation, autotuned.

On a GPU the kernel is compiled and timed in TFLOP/s against the device's calibrated fp16
matmul (cuBLAS) beside torch.matmul. Without one Triton's interpreter runs it (correctness only,
no speed grade) on smaller shapes.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from gpulab.exercises import api
from gpulab.exercises import kernel_checks as kc
from gpulab.exercises import triton_checks as tc

ENTRY = "matmul"
OWN_KERNEL = True  # the work must be done by a Triton kernel of the learner's file
ALLOW = tc.ALLOW  # allocation, views and launches: your kernel does the work

TIMED = 4096  # M = N = K of the timed product: big enough for cuBLAS to reach its peak


def cases(ctx: api.Context) -> list[api.Case]:
    interpret = tc.use_interpreter(ctx)
    shapes = [
        (1, 1, 1),
        (2, 3, 5),
        (31, 33, 17),
        (33, 31, 65),
        (64, 64, 64),
        (65, 127, 33),
        (1, 1025, 1),
        # K in the thousands: a float16 accumulator's rounding (about 0.05 here) shows
        (65, 1025, 33) if interpret else (1000, 2050, 1022),
    ]
    out = []
    for m, k, n in shapes:
        a = ctx.rng.uniform(-1, 1, (m, k)).astype(np.float16)
        b = ctx.rng.uniform(-1, 1, (k, n)).astype(np.float16)
        out.append(api.Case(f"M={m} K={k} N={n}", {"a": a, "b": b}))
    return out


def expected(case: api.Case, ctx: api.Context) -> np.ndarray:
    return case.args["a"].astype(np.float64) @ case.args["b"].astype(np.float64)


def run(fn: Any, case: api.Case, ctx: api.Context) -> np.ndarray:
    a, b = case.args["a"], case.args["b"]
    shape = (a.shape[0], b.shape[1])
    return tc.run_guarded(fn, [a, b], shape, np.float32, ctx.device, names=("a", "b"))


def compare(want: np.ndarray, got: Any, case: api.Case, ctx: api.Context) -> api.Mismatch | None:
    # Products of float16 values are exact in float32; a float32 sum of K of them (each at
    # most 1) is off by about 1e-7 * sqrt(K) relative to its terms. A float16 accumulator is
    # off by 1e-3 of the running sum at every add: 1e-4 * sqrt(K) separates the two.
    k = case.args["a"].shape[1]
    bad = kc.compare_guarded(want, got, rtol=1e-4, atol=1e-4 * float(np.sqrt(k)))
    if bad is not None and want.size > 1:
        g = kc.guard_size(want.size)
        body = np.asarray(got)[0, g : g + want.size]
        exact = np.isfinite(body) & (body.astype(np.float16).astype(np.float32) == body)
        if exact.all() and not np.array_equal(want, want.astype(np.float16)):
            bad.message += " (every value of out is a float16 number: a float16 accumulator?)"
    return bad


def untimed(ctx: api.Context) -> str:
    return tc.untimed(ctx)


def timing(fn: Any, ctx: api.Context) -> api.TimingSpec | None:
    if not ctx.gpu:
        return None
    import torch

    n = TIMED if not ctx.quick else 2048

    def setup(i: int) -> tuple:
        g = torch.Generator(device=ctx.device).manual_seed(ctx.seed * 1000 + i)
        a = (torch.rand(n, n, device=ctx.device, generator=g) - 0.5).half()
        b = (torch.rand(n, n, device=ctx.device, generator=g) - 0.5).half()
        return a, b, torch.empty(n, n, device=ctx.device, dtype=torch.float32)

    def library(io: tuple) -> Any:
        return torch.matmul(io[0], io[1])  # cuBLAS: fp32 accumulate, fp16 out

    return tc.spec(
        fn,
        setup,
        library,
        "torch.matmul (cuBLAS fp16)",
        2 * n**3,
        metric="TFLOP/s",
        ceiling="matmul:fp16",
        note="2 * M * N * K operations",
        # against cuBLAS's float16 output: its final rounding, 2^-11 of |out| (about sqrt(n)/3)
        rtol=2e-3,
        atol=2e-3,
    )
