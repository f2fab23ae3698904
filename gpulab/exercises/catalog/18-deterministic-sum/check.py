"""Check for deterministic-sum: out[0] = sum(x), the same bits on every run, close to float64.

Each case is run several times on the same input (six on a GPU for a large one; the tests run
the CPU emulator with the blocks in a new random order each launch), and every run must give the
same float32 bits: a sum whose order depends on which block's atomicAdd lands first fails there,
however accurate each run is. Then the value must be within 1e-5 of the sum of |x| of the float64
sum, which a float16 accumulator misses.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from gpulab.exercises import api
from gpulab.exercises import kernel_checks as kc

ENTRY = "det_sum"
OWN_KERNEL = True  # the work must be done by a kernel the learner's file compiles
RELATIVE = 1e-5  # of sum(|x|): a fixed-order float32 tree is near 1e-7; float16 is near 1e-3


def _runs(ctx: api.Context, n: int) -> int:
    return 6 if ctx.cupy and n > 4096 else 3


def cases(ctx: api.Context) -> list[api.Case]:
    out = []
    for n in [*api.EDGE_SIZES, 100_003, ctx.big(4)]:
        # mixed signs and magnitudes: many different roundings, so a change of order shows
        x = (ctx.rng.standard_normal(n) * 10 + 3).astype(np.float32)
        out.append(api.Case(f"n={n}", {"x": x}))
    return out


def expected(case: api.Case, ctx: api.Context) -> np.ndarray:
    x = case.args["x"].astype(np.float64)
    case.meta["atol"] = RELATIVE * float(np.abs(x).sum())
    return np.array([x.sum()])


def run(fn: Any, case: api.Case, ctx: api.Context) -> np.ndarray:
    x = case.args["x"]
    return kc.run_guarded(fn, [x], (1,), np.float32, repeats=_runs(ctx, x.size), names=("x",))


def compare(want: np.ndarray, got: Any, case: api.Case, ctx: api.Context) -> api.Mismatch | None:
    runs = api.to_host(got)
    g = kc.guard_size(1)
    values = runs[:, g]
    bits = values.view(np.uint32)
    for r in range(1, len(bits)):
        if bits[r] != bits[0]:
            return api.Mismatch(
                f"run {r + 1} of {len(bits)} gave {float(values[r]):.9g}, run 1 gave "
                f"{float(values[0]):.9g} on the "
                "same input: the sum must have the same bits every run (does the order of "
                "atomicAdds decide it?)",
                index=0,
                expected=float(values[0]),
                got=float(values[r]),
            )
    bad = kc.compare_guarded(want, got, rtol=0.0, atol=case.meta["atol"])
    if bad is not None:
        bad.message += f" (allowed: {RELATIVE:g} of sum|x|; is the running sum kept in float32?)"
    return bad


def timing(fn: Any, ctx: api.Context) -> api.TimingSpec:
    import cupy as cp

    n = ctx.big(4)
    atomic = cp.RawKernel(ATOMIC, "atomic_sum")
    blocks = 8 * kc.sm_count()

    def setup(i: int) -> tuple:
        # whole numbers: both sums are exact whatever their order, so a timed call must match
        # the peer's to the bit (one that skipped its work cannot)
        x = kc.device_rng(ctx, i).integers(-4, 5, size=n).astype(cp.float32)
        return x, cp.empty(1, dtype=cp.float32)

    def library(io: tuple) -> None:
        io[1].fill(0)
        atomic((blocks,), (256,), (io[0], io[1], cp.int64(n)))

    return kc.spec(
        fn,
        setup,
        library,
        "atomicAdd per block (not deterministic)",
        4 * n,
        note="4 bytes read per element",
        rtol=0.0,
        atol=0.5,
    )


# The peer the timing compares with: the fast, nondeterministic way (one atomic per block).
ATOMIC = r"""
extern "C" __global__ void atomic_sum(const float* x, float* out, long long n) {
    __shared__ float sm[256];
    int t = threadIdx.x;
    float v = 0.0f;
    for (long long i = (long long)blockIdx.x * 256 + t; i < n; i += 256LL * gridDim.x) v += x[i];
    sm[t] = v;
    __syncthreads();
    for (int s = 128; s > 0; s >>= 1) {
        if (t < s) sm[t] += sm[t + s];
        __syncthreads();
    }
    if (t == 0) atomicAdd(out, sm[0]);
}
"""
