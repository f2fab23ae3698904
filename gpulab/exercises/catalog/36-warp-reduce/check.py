"""Check for warp-reduce: out[0] = sum(x), combined within each warp by shuffles.

The shuffles are the lesson, so after each case the check reads the learner's launches
(ctx.watch): each kernel's compiled code must move values between lanes with warp shuffles
(a `shfl.sync` or `redux.sync` instruction in its PTX, whatever wrote it: `__shfl_*_sync`, a
tile's `shfl_*`, `cg::reduce`; the source where NVRTC is missing), and no launch may use a
float of shared memory per thread or more: that is a tree still in shared memory, whatever a
last step does. A last-warp unroll through volatile shared memory without `__syncwarp()` gets
its own message, since it is the race independent thread scheduling made of an old idiom.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np

from gpulab.exercises import api
from gpulab.exercises import kernel_checks as kc

ENTRY = "warp_sum"
OWN_KERNEL = True  # the work must be done by a kernel the learner's file compiles


def warp_rule(ctx: api.Context) -> str | None:
    """Why the last call's launches do not reduce with warp shuffles, or None."""
    watch = ctx.watch
    if watch is None or not watch.calls:  # not under the grader (a test calling run() directly)
        return None
    source = watch.source
    fallback = Path(source).read_text() if source is not None else ""
    for launch in watch.calls[-1].launches:
        if launch.kind not in ("RawKernel", "RawModule"):
            return (
                f"your {launch.kind} lets CuPy write the reduction: this exercise asks for a "
                "RawKernel whose warps combine their values with __shfl_down_sync"
            )
        code = kc.launch_code(launch, fallback)
        if not kc.launch_shuffles(launch, code):
            text = re.sub(r"//[^\n]*|/\*.*?\*/", "", code, flags=re.S)
            if "volatile" in text and "__syncwarp" not in text:
                return (
                    f"{launch.kernel} has no warp shuffle (no __shfl_*_sync call): its last "
                    "warp adds through volatile shared memory with no __syncwarp() between the "
                    "steps, which relies on a warp's threads moving in lockstep; since Volta "
                    "they need not (independent thread scheduling), so that is a race. Combine "
                    "the warp's values with __shfl_down_sync(0xffffffff, v, offset)"
                )
            return (
                f"{launch.kernel} has no warp shuffle (no __shfl_*_sync call): this exercise "
                "asks for each warp's 32 values to be combined in registers with "
                "__shfl_down_sync, not through shared memory"
            )
        used, threads = kc.shared_bytes(launch), kc.block_threads(launch)
        if used is not None and used >= 4 * threads:
            return (
                f"your launch of {launch.kernel} uses {used} bytes of shared memory for {threads} "
                "threads, a float per thread or more: the tree is still in shared memory. "
                "Combine each warp's values with shuffles and keep one value per warp "
                f"({4 * -(-threads // 32)} bytes)"
            )
    return None


def cases(ctx: api.Context) -> list[api.Case]:
    out = []
    for n in [*api.EDGE_SIZES, 4097, ctx.big(4)]:
        x = kc.nonzero_ints(ctx.rng, -4, 4, n).astype(np.float32)
        out.append(api.Case(f"n={n}", {"x": x}))
    return out


def expected(case: api.Case, ctx: api.Context) -> np.ndarray:
    return np.array([float(case.args["x"].astype(np.int64).sum())])


def run(fn: Any, case: api.Case, ctx: api.Context) -> np.ndarray:
    x = case.args["x"]
    got = kc.run_guarded(fn, [x], (1,), np.float32, repeats=kc.repeats(ctx, x.size), names=("x",))
    why = warp_rule(ctx)
    if why:
        raise api.CheckError(why)
    return got


def compare(want: np.ndarray, got: Any, case: api.Case, ctx: api.Context) -> api.Mismatch | None:
    return kc.compare_guarded(want, got, rtol=0.0, atol=0.5)  # whole numbers: exact


def timing(fn: Any, ctx: api.Context) -> api.TimingSpec:
    import cupy as cp

    n = ctx.big(4)

    def setup(i: int) -> tuple:
        # whole numbers again: every timed call's sum is exact, so it must match to the bit
        x = kc.device_rng(ctx, i).integers(-4, 5, size=n).astype(cp.float32)
        return x, cp.empty(1, dtype=cp.float32)

    def library(io: tuple) -> None:
        cp.sum(io[0], keepdims=True, out=io[1])

    return kc.spec(
        fn, setup, library, "cupy.sum", 4 * n, note="4 bytes read per element", rtol=0, atol=0.5
    )
