"""Check for warp-argmax: out[0] = the index of the largest value of x (the first one on a tie,
as numpy.argmax), found with warp shuffles.

The lesson sums a warp with five shuffle steps; an argmax moves two values through each step, a
value and its index, and the rule that picks between two pairs must break ties the same way
wherever they meet (in a thread's loop, a shuffle, a block's last step, across blocks), or the
answer depends on which warp or block got there first. The inputs are built for that: the
largest value is planted at one to three places (often in different blocks, one in the tail),
and some inputs are all negative, so a search that starts from 0 finds nothing.

After each case the check reads the learner's launches (ctx.watch). Some launch must be handed
x (a kernel that only writes an index found elsewhere does not search), and each launch handed x
must move values between lanes with warp shuffles, read from its compiled code (a `shfl.sync` or
`redux.sync` instruction in its PTX, whatever wrote it: `__shfl_*_sync`, a tile's `shfl_*`,
`cg::reduce`; the source where NVRTC is missing); a launch that only finishes the job (the
blocks' pairs, a packed key decoded) need not. No launch may use a float of shared memory per
thread or more: a tree still in shared memory, whatever a last step does. A last-warp unroll
through volatile shared memory without `__syncwarp()` gets its own message.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np

from gpulab.exercises import api, own_work
from gpulab.exercises import kernel_checks as kc

ENTRY = "warp_argmax"
OWN_KERNEL = True  # the work must be done by a kernel the learner's file compiles


def warp_rule(ctx: api.Context, x: tuple[int, int]) -> str | None:
    """Why the last call's launches do not search x with warp shuffles, or None. Every launch
    handed x (the span of its addresses) must shuffle, and one must be: a launch that only
    finishes the job (the blocks' pairs, a key decoded) need not. No launch may keep a tree in
    shared memory."""
    watch = ctx.watch
    if watch is None or not watch.calls:  # not under the grader (a test calling run() directly)
        return None
    source = watch.source
    fallback = Path(source).read_text() if source is not None else ""
    launches = watch.calls[-1].launches
    lo, hi = x
    # handed x: its address, or one inside or at the end of its span (a red team passed the
    # end pointer and indexed back), as an array, an integer or a float
    searching = [ln for ln in launches if any(lo <= p <= hi for p in ln.pointers)]
    # and the launch that starts the most threads, however x reaches it: the search is spread
    # over the threads, a launch that finishes the job needs few
    if launches:
        widest = max(launches, key=kc.launch_threads)
        if widest not in searching:
            searching.append(widest)
    for launch in launches:
        if launch.kind not in ("RawKernel", "RawModule"):
            return (
                f"your {launch.kind} lets CuPy write the reduction: this exercise asks for a "
                "RawKernel whose warps combine their (value, index) pairs with __shfl_down_sync"
            )
        code = kc.launch_code(launch, fallback)
        if launch in searching and not kc.launch_shuffles(launch, code):
            text = re.sub(r"//[^\n]*|/\*.*?\*/", "", code, flags=re.S)
            if "volatile" in text and "__syncwarp" not in text:
                return (
                    f"{launch.kernel} has no warp shuffle (no __shfl_*_sync call): its last "
                    "warp compares through volatile shared memory with no __syncwarp() between "
                    "the steps, which relies on a warp's threads moving in lockstep; since Volta "
                    "they need not (independent thread scheduling), so that is a race. Move each "
                    "warp's value and index with __shfl_down_sync(0xffffffff, v, offset)"
                )
            return (
                f"{launch.kernel} has no warp shuffle that runs (no __shfl_*_sync call, or one "
                "behind a branch no lane takes): this exercise "
                "asks for each warp's 32 (value, index) pairs to be combined in registers with "
                "__shfl_down_sync, not through shared memory"
            )
        used, threads = kc.shared_bytes(launch), kc.block_threads(launch)
        if used is not None and used >= 4 * threads:
            return (
                f"your launch of {launch.kernel} uses {used} bytes of shared memory for {threads} "
                "threads, a float per thread or more: the tree is still in shared memory. "
                "Combine each warp's pairs with shuffles and keep one pair per warp "
                f"({12 * -(-threads // 32)} bytes)"
            )
    if launches and not searching:
        return (
            "none of your kernels was handed x: the index was found somewhere else (on the "
            "host?) and a kernel of yours only wrote it. This exercise asks for the search on "
            "the GPU, its warps combining (value, index) pairs with shuffles"
        )
    return None


def _case(ctx: api.Context, n: int, negative: bool = False) -> api.Case:
    rng = ctx.rng
    x = rng.uniform(-100.0, -1.0 if negative else 100.0, n).astype(np.float32)
    top = np.float32(np.max(x) + np.float32(1.0))  # exact: well inside float32's range
    places = rng.choice(n, size=min(n, int(rng.integers(1, 4))), replace=False)
    if n > 64:  # one of them in the tail: the last partial warp of the last partial block
        places[-1] = n - 1 - int(rng.integers(0, 31))
    x[places] = top
    how = "all negative, " if negative else ""
    return api.Case(f"n={n}, {how}largest at {len(set(places.tolist()))} place(s)", {"x": x})


def cases(ctx: api.Context) -> list[api.Case]:
    sizes = [*api.EDGE_SIZES, 4097, ctx.big(4)]
    out = [_case(ctx, n) for n in sizes]
    out.insert(5, _case(ctx, 1025, negative=True))
    out.append(_case(ctx, ctx.big(4) - 3, negative=True))
    return out


def expected(case: api.Case, ctx: api.Context) -> np.ndarray:
    return np.array([int(np.argmax(case.args["x"]))], dtype=np.int64)  # the first on a tie


def run(fn: Any, case: api.Case, ctx: api.Context) -> np.ndarray:
    x = case.args["x"]
    given: list[tuple[int, int]] = []

    def call(x_dev: Any, out: Any) -> None:
        start = own_work.address(x_dev)
        given.append((start, start + x_dev.nbytes) if start is not None else (0, 0))
        fn(x_dev, out)

    got = kc.run_guarded(call, [x], (1,), np.int64, repeats=kc.repeats(ctx, x.size), names=("x",))
    why = warp_rule(ctx, given[-1])
    if why:
        raise api.CheckError(why)
    return got


def compare(want: np.ndarray, got: Any, case: api.Case, ctx: api.Context) -> api.Mismatch | None:
    bad = kc.compare_guarded(want, got, rtol=0.0, atol=0.0)  # an index: exact
    if bad is not None and bad.got is not None and bad.got != api.poison(1, np.int64)[0]:
        x = case.args["x"]
        k = int(bad.got)
        if 0 <= k < x.size and x[k] == x[int(want[0])]:
            bad.message += (
                f": x[{k}] is the largest value too, but x[{int(want[0])}] comes first; on a tie "
                "the smaller index wins, wherever two pairs meet"
            )
    return bad


def timing(fn: Any, ctx: api.Context) -> api.TimingSpec:
    import cupy as cp

    n = ctx.big(4)

    def setup(i: int) -> tuple:
        x = kc.device_rng(ctx, i).standard_normal(n, dtype=cp.float32)
        return x, cp.empty(1, dtype=cp.int64)

    def library(io: tuple) -> Any:
        return cp.argmax(io[0])

    return kc.spec(
        fn, setup, library, "cupy.argmax", 4 * n, note="4 bytes read per element", rtol=0, atol=0
    )
