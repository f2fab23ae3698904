"""Check for deterministic-sum: out[0] = sum(x), the same bits on every run, close to float64.

Determinism is read from what ran, not hoped for from kind inputs. Each case is run several times
on the same input, and every run must give the same float32 bits:

- each run in another order of the blocks: the CPU emulator runs them in a new random order each
  launch; on a GPU every run after the first starts beside a short kernel of the check's own
  (`gpulab_crowd`, on a stream of its own) that holds a different share of the SMs for a
  different time, so the learner's blocks land on the SMs, and finish, in another order;
- on inputs where any order left to the scheduler shows: two cases hold a few pairs of values +v
  and -v near 2^59 that cancel exactly. A plain value added to a running sum that holds one of a
  pair rounds at its spacing (2^7, even in a double) and keeps that rounding when the partner
  cancels it, so which plain values meet a big one, an order, decides the last bits. A double
  accumulator fed by atomicAdd gives the same bits on plain inputs (the double sum of a few
  hundred float32 partials of similar size is exact in any order), and different bits here.

Then the value must be within 1e-5 of the sum of |x| of the exact sum, which a float16
accumulator misses.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from gpulab.exercises import api
from gpulab.exercises import kernel_checks as kc
from gpulab.exercises.own_work import float_atomic_adds

ENTRY = "det_sum"
OWN_KERNEL = "raw"  # the work must be done by a RawKernel the learner's file compiles
RELATIVE = 1e-5  # of sum(|x|): a fixed-order float32 tree is near 1e-7; float16 is near 1e-3


# Pairs +v, -v planted in a cancelling case: few, so that most blocks of any grid (16 blocks on
# the emulator's two SMs, hundreds on a GPU) hold plain values only, whose sums are what a big
# partial in the running sum rounds away. Each v is an odd m (129 to 255) times 2^52: a block's
# float32 sum of one or two of them is exact (the plain values beside them fall below its spacing
# and drop out, the same way every run), so the big partials cancel exactly whatever the grid.
PAIRS = 3
BIG_SHIFT = 52  # v = m * 2^52, from 2^59 to 2^60: a double's spacing there is 2^7
CANCELLING = (
    "values near 2^59 that cancel in pairs: in a running sum that holds one of a pair, what is "
    "added rounds at its spacing (128, even in a double), so an order left to the scheduler shows"
)


SMALL = 4096  # elements: a few blocks, whose order decides little


def _runs(ctx: api.Context, n: int, cancelling: bool) -> int:
    """Runs of one input. On a GPU the order shows most where planted pairs cancel: six runs
    there, each beside another crowd; three on a large plain input; one on a small one, which
    checks the edges (a few blocks on one or two SMs have little order to vary; each repeated
    call cost about 7 ms of a check meant to take under half a second). The emulator shuffles
    its blocks every launch: three everywhere."""
    if not ctx.cupy:
        return 3
    if n <= SMALL:
        return 1
    return 6 if cancelling else 3


def _large(ctx: api.Context) -> int:
    """The large case: enough elements for hundreds of blocks on every SM (4M: 16 MB), not
    the whole 32 MB a kernel case fills, so drawing it and summing it on the host (twice a
    check: a plain and a cancelling one) costs less of the check."""
    return ctx.big(4, cap=1 << 22)


def _draw(rng: np.random.Generator, n: int) -> np.ndarray:
    """Mixed signs and magnitudes (-12 to 28, exponents from far below 1 up to 2^4): many
    different roundings, so a change of order shows. Uniform float32 draws, in place: a normal
    draw took a quarter of a second of the check on the 8M-element case."""
    x = rng.random(n, dtype=np.float32)
    x -= np.float32(0.3)
    x *= np.float32(40)
    return x


def _cancel(x: np.ndarray, rng: np.random.Generator) -> None:
    """Plant PAIRS pairs +v, -v at random places of x: their sum is exactly 0 in any order, but
    not the rounding of what is added beside them."""
    where = rng.choice(x.size, 2 * PAIRS, replace=False)
    v = ((2 * rng.integers(64, 128, PAIRS) + 1) * 2.0**BIG_SHIFT).astype(np.float32)
    x[where[:PAIRS]] = v
    x[where[PAIRS:]] = -v


def cases(ctx: api.Context) -> list[api.Case]:
    out = []
    for n in [*api.EDGE_SIZES, 100_003, _large(ctx)]:
        out.append(api.Case(f"n={n}", {"x": _draw(ctx.rng, n)}))
    for n in (100_003, _large(ctx)):
        x = _draw(ctx.rng, n)
        _cancel(x, ctx.rng)
        out.append(api.Case(f"n={n}, {PAIRS} pairs +v, -v (v near 2^59) that cancel", {"x": x}))
    return out


def _planted(size: np.ndarray) -> np.ndarray:
    """Where the planted pairs are, from the values' magnitudes: plain values stay under 2^9."""
    return size >= 2.0**BIG_SHIFT


def expected(case: api.Case, ctx: api.Context) -> np.ndarray:
    x = case.args["x"]
    size = np.abs(x)
    planted = _planted(size)
    # summed in float64 without a float64 copy of x (numpy widens block by block)
    case.meta["atol"] = RELATIVE * float(size.sum(dtype=np.float64))
    case.meta["cancelling"] = bool(planted.any())
    # the planted pairs cancel exactly; a float64 sum over them would round the rest away
    return np.array([x.sum(dtype=np.float64, where=~planted)])


# A kernel of the check's own (a `gpulab_` name: the kernel trace counts it as the grader's) that
# keeps some SMs busy for a while, so the learner's blocks are placed, and finish, in another order
CROWD = r"""
extern "C" __global__ void gpulab_crowd(long long cycles) {
    long long start = clock64();
    while (clock64() - start < cycles) {
    }
}
"""


def _crowd(ctx: api.Context, runs: int) -> Any:
    """before(r) for run_guarded on a GPU: run 0 alone, run r beside the crowd kernel on r/runs
    of the SMs for about 10 * r microseconds; None off a GPU (the emulator shuffles instead)."""
    if not ctx.cupy:
        return None
    import contextlib

    import cupy as cp

    with ctx.watch.aside() if ctx.watch is not None else contextlib.nullcontext():
        stream = cp.cuda.Stream(non_blocking=True)  # beside the learner's stream, not before it
    crowd = cp.RawKernel(CROWD, "gpulab_crowd")
    sms = kc.sm_count()

    def before(r: int) -> None:
        if r:
            with stream:  # a RawKernel launches on the current stream
                crowd((max(1, sms * r // runs),), (1024,), (cp.int64(20_000 * r),))

    return before


def run(fn: Any, case: api.Case, ctx: api.Context) -> np.ndarray:
    x = case.args["x"]
    # expected() has read it already (the grader's order); a caller that skips it reads it here
    cancelling = case.meta.get("cancelling")
    if cancelling is None:
        cancelling = bool(_planted(np.abs(x)).any())
    runs = _runs(ctx, x.size, cancelling)
    got = kc.run_guarded(
        fn, [x], (1,), np.float32, repeats=runs, names=("x",), before=_crowd(ctx, runs)
    )
    last = float(got[-1][kc.guard_size(1)])
    _not_handed(last, ctx)
    if cancelling:  # where the repeats decide: a kept answer is what would make them agree
        _same_work(fn, x, last, ctx)
    _no_float_atomics(ctx)
    return got


def _no_float_atomics(ctx: api.Context) -> None:
    """No launch may add floats with atomics, read from the compiled code: their order is the
    order blocks finish, so equal bits on repeated runs come from elsewhere (a kept answer, kind
    inputs), not from the sum. Integer atomics (a ticket, a counter) decide no bits of it."""
    watch = ctx.watch
    if watch is None or not watch.calls:  # not under the grader (a test calling run() directly)
        return
    for launch in watch.calls[-1].launches:
        if float_atomic_adds(launch):
            raise api.CheckError(
                f"{launch.kernel} adds floating-point values with atomics: they land in the "
                "order the blocks finish, so they cannot give the same bits every run; "
                "determinism has to come from a fixed order of the sum (each block's partial "
                "in its own slot, then one block or a last-block pass adds them in order)"
            )


def _launches(call: Any) -> list[tuple]:
    """A call's launches as (kernel, grid, block): what a run on an input of this size runs."""

    def dims(d: Any) -> tuple[int, ...]:
        return tuple(int(v) for v in d) if isinstance(d, tuple | list) else (int(d or 1),)

    return [(la.kernel, dims(la.grid), dims(la.block)) for la in call.launches]


def _not_handed(last: float, ctx: api.Context) -> None:
    """No launch of the last run may be handed the sum it wrote as a floating-point argument:
    bits kept on the host and written back are not a sum."""
    watch = ctx.watch
    if watch is None or not watch.calls:  # not under the grader (a test calling run() directly)
        return
    handed = [la.kernel for la in watch.calls[-1].launches if np.float32(last) in la.scalars]
    if handed and last != 0.0:
        raise api.CheckError(
            f"work kept from an earlier call: your {ENTRY} handed {handed[0]} the sum it wrote "
            f"({last:.9g}) as an argument: every run must compute it on the GPU"
        )


def _same_work(fn: Any, x: np.ndarray, last: float, ctx: api.Context) -> None:
    """The runs above repeat one input, which is what an answer kept from an earlier run (keyed
    by the values, the address, anything) would serve. One more call, on new values of the same
    size that nothing kept can answer, must launch what the last repeat launched, and give its
    own sum."""
    watch = ctx.watch
    if watch is None or not watch.calls:  # not under the grader (a test calling run() directly)
        return
    repeat = _launches(watch.calls[-1])
    new = _draw(np.random.default_rng(), x.size)
    got = float(
        api.to_host(kc.run_guarded(fn, [new], (1,), np.float32, names=("x",)))[0][kc.guard_size(1)]
    )
    fresh = _launches(watch.calls[-1])
    if repeat != fresh:

        def said(ls: list[tuple]) -> str:
            return ", ".join(f"{k} {g}x{b}" for k, g, b in ls) or "no kernel"

        raise api.CheckError(
            f"work kept from an earlier call: on a repeat of an input your {ENTRY} launched "
            f"{said(repeat)}; on new values of the same size, {said(fresh)}. Every run must sum "
            "its input; determinism has to come from the order of the sum, not from a kept answer"
        )
    # the same bits as the repeated input's sum, for values whose sum is another: kept
    if np.float32(got) == np.float32(last) and np.float32(new.astype(np.float64).sum()) != last:
        raise api.CheckError(
            f"work kept from an earlier call: on new values of the same size your {ENTRY} gave "
            f"{got:.9g}, the answer it gave for the input before (an answer kept by the "
            "buffer's address?)"
        )


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
                "atomicAdds decide it?"
                + (f" This input holds {CANCELLING})" if case.meta.get("cancelling") else ")"),
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
