"""Pieces the kernel track's checks share (catalog 20..33): guarded outputs, repeats, timing.

A kernel without a bounds check writes past the end of its output. On a GPU that lands in memory
the pool rounded the allocation up to, so the output itself looks right. So every output here is a
view at the start of a larger poisoned buffer, and the check reads the tail: a write there fails
with "wrote past the end". Kernels that share memory between threads are run several times (a
race that a single run can hide rarely hides three times over thousands of blocks).

CuPy is imported inside the functions: check modules are imported by processes that never touch a
GPU (the catalog, the UI).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from gpulab.exercises import api

GUARD_MIN = 4096  # elements past the output that a correct kernel never touches


def guard_size(total: int) -> int:
    """The guard after an output of `total` elements: enough for a 2-D grid's spare rows."""
    return max(GUARD_MIN, total // 4)


def run_guarded(
    fn: Callable[..., Any],
    inputs: Sequence[Any],
    shape: tuple[int, ...],
    dtype: Any,
    repeats: int = 1,
) -> np.ndarray:
    """Call fn(*device copies of inputs, out) `repeats` times, each with a fresh poisoned output
    inside a guarded buffer; the host buffers, stacked: shape (repeats, total + guard)."""
    import cupy as cp

    total = int(np.prod(shape, dtype=np.int64))
    results = []
    for _ in range(repeats):
        args = [cp.asarray(x) if isinstance(x, np.ndarray) else x for x in inputs]
        buf = api.poison(total + guard_size(total), dtype, xp=cp)
        out = buf[:total].reshape(shape)
        fn(*args, out)
        results.append(api.to_host(buf))
    return np.stack(results)


def compare_guarded(
    want: np.ndarray,
    got: Any,
    *,
    name: str = "out",
    rtol: float | None = None,
    atol: float | None = None,
) -> api.Mismatch | None:
    """Compare each run's output with `want`, after checking nothing was written past its end."""
    runs = api.to_host(got)
    want = np.ascontiguousarray(want)  # once, not once per run (a transpose's reference is not)
    total = want.size
    for r, buf in enumerate(runs):
        where = f"run {r + 1} of {len(runs)}: " if len(runs) > 1 else ""
        tail = buf[total:]
        poison = api.poison(1, buf.dtype)[0]
        touched = (tail != poison) if buf.dtype.kind in "iu" else ~np.isnan(tail)
        if touched.any():
            k = int(np.argmax(touched))
            return api.Mismatch(
                f"{where}wrote past the end: element {total + k} of the buffer was set to "
                f"{tail[k].item()!r}, but {name} has only {total} elements (missing bounds check?)",
                index=total + k,
                got=tail[k].item(),
            )
        bad = api.compare_arrays(
            want, buf[:total].reshape(want.shape), name=name, rtol=rtol, atol=atol
        )
        if bad is not None:
            bad.message = where + bad.message
            return bad
    return None


def repeats(ctx: api.Context, size: int) -> int:
    """How many runs a case gets: three for a large one on a GPU, where a race shows only some of
    the time; one elsewhere (the CPU emulator's schedule is the same every run)."""
    return 3 if ctx.cupy and size > 4096 else 1


def device_rng(ctx: api.Context, i: int) -> Any:
    """A CuPy generator for timing input set i (drawn on the device: no host copy of 256 MB)."""
    import cupy as cp

    return cp.random.default_rng(ctx.seed * 1000 + i)


def sm_count() -> int:
    import cupy as cp

    return int(cp.cuda.Device().attributes["MultiProcessorCount"])


def spec(
    fn: Callable[..., Any],
    setup: Callable[[int], Any],
    library: Callable[[Any], Any],
    library_name: str,
    work: float,
    *,
    metric: str = "GB/s",
    ceiling: str = "copy",
    note: str = "",
    sets: int = 4,
    rtol: float = 1e-4,
    atol: float = 1e-6,
) -> api.TimingSpec:
    """A TimingSpec whose inputs are a tuple passed to fn as positional arguments, the output
    last. After the timed calls, `verify` checks that output against the library's on the same
    inputs, so code that does the work only at the check's sizes fails."""

    def verify(io: Any) -> str | None:
        mine = api.to_host(io[-1]).copy()
        theirs = library(io)
        theirs = api.to_host(io[-1] if theirs is None else theirs).reshape(mine.shape)
        # No float64 copy of theirs: the scan takes each chunk's difference in float64 (a
        # 64M-element output made a 512 MB temporary here, on every repeat check)
        bad = api.compare_arrays(theirs, mine, rtol=rtol, atol=atol)
        return (
            None
            if bad is None
            else f"the timed calls' output differs from {library_name}: {bad.message}"
        )

    return api.TimingSpec(
        setup=setup,
        learner=lambda inputs: fn(*inputs),
        library=library,
        library_name=library_name,
        work=float(work),
        metric=metric,
        ceiling=ceiling,
        sync="cupy",
        sets=sets,
        note=note,
        verify=verify,
    )


def nonzero_ints(rng: np.random.Generator, low: int, high: int, size: Any) -> np.ndarray:
    """Integers in [low, high] without 0 (int64): exact in float32 sums while they stay small."""
    v = rng.integers(low, high, size=size, endpoint=True)
    return np.where(v == 0, 1, v)
