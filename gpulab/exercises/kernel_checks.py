"""Pieces the checks of the catalog's CUDA C exercises (through CuPy) share:
guarded outputs, repeats, timing.

A kernel without a bounds check writes past the end of its output. On a GPU that lands in memory
the pool rounded the allocation up to, so the output itself looks right. So every output here is a
view at the start of a larger poisoned buffer, and the check reads the tail: a write there fails
with "wrote past the end". Kernels that share memory between threads are run several times (a
race that a single run can hide rarely hides three times over thousands of blocks).

CuPy is imported inside the functions: check modules are imported by processes that never touch a
GPU (the catalog, the UI).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from gpulab.exercises import api
from gpulab.exercises.freed import POISON
from gpulab.exercises.fresh import Refresher
from gpulab.exercises.own_work import uses_shuffles

GUARD_MIN = 4096  # elements on each side of an array that a correct kernel never touches


def guard_size(total: int) -> int:
    """The guard on each side of an array of `total` elements: enough for a 2-D grid's spare
    rows; a multiple of 64 elements, so the array inside keeps the alignment of a 16-byte load."""
    return -(-max(GUARD_MIN, total // 4) // 64) * 64


def input_guard(dtype: Any) -> Any:
    """What an input's guard holds: not the outputs' poison (a kernel that copies a guard
    into an output's guard must still show), and a value that spoils any result it enters."""
    kind = np.dtype(dtype)
    if kind.kind == "f":
        return kind.type(np.finfo(kind).max / 4)
    if kind.kind == "i":
        return kind.type(np.iinfo(kind).min + 7)
    if kind.kind == "u":
        return kind.type(np.iinfo(kind).max - 13)
    return kind.type(True)


# A float result this large has an input's guard value in it (no exercise's data comes near it).
_GUARD_SIZED = float(np.finfo(np.float32).max) / 4 / 64


def guarded_copy(x: np.ndarray, xp: Any, on_device: Any = None) -> tuple[Any, Any]:
    """(buffer, view): a device copy of `x` at the middle of a buffer poisoned on both sides, so
    a kernel that reads past either end reads NaN (or an integer sentinel) into its output.
    `on_device`: `x` already uploaded, copied from there."""
    g = guard_size(x.size)
    buf = xp.full(x.size + 2 * g, input_guard(x.dtype), dtype=x.dtype)
    view = buf[g : g + x.size].reshape(x.shape)
    view[...] = xp.asarray(x) if on_device is None else on_device
    return buf, view


def run_guarded(
    fn: Callable[..., Any],
    inputs: Sequence[Any],
    shape: tuple[int, ...],
    dtype: Any,
    repeats: int = 1,
    names: Sequence[str] = (),
    before: Callable[[int], None] | None = None,
    spans: list[list[int]] | None = None,
) -> np.ndarray:
    """Call fn(*device copies of inputs, out) `repeats` times, each with a fresh poisoned output
    in the middle of a guarded buffer; the host buffers, stacked: shape (repeats, guard + total +
    guard). Each input sits in a guarded buffer too, and after each call the inputs must be as
    they were and their guards untouched (api.CheckError names the input and the element).
    `before(r)`, where given, runs just before call r (outside the learner's call): a check
    that wants each run in another context (other work on the GPU) sets it up there. `spans`,
    where given, gets each array input's device address, a list per input (one a run): a rule
    that reads what a launch loaded through one input finds its allocation by it."""
    import cupy as cp

    total = int(np.prod(shape, dtype=np.int64))
    g = guard_size(total)
    results: list[np.ndarray] = []
    # Each host input crosses the bus once; every run's guarded buffer is filled on the device
    # (a repeat of an 8M-element input paid 32 MB of pageable upload each time)
    uploaded = {i: cp.asarray(x) for i, x in enumerate(inputs) if isinstance(x, np.ndarray)}
    for _ in range(repeats):
        args, kept = [], []
        for i, x in enumerate(inputs):
            if isinstance(x, np.ndarray):
                buf, view = guarded_copy(x, cp, uploaded[i])
                args.append(view)
                if spans is not None:
                    while len(spans) <= i:
                        spans.append([])
                    spans[i].append(_address(view))
                name = names[i] if i < len(names) else f"input {i + 1}"
                kept.append((name, x, buf, buf.copy()))  # a device snapshot, guards and all
            else:
                args.append(x)
        buf = api.poison(total + 2 * g, dtype, xp=cp)
        out = buf[g : g + total].reshape(shape)
        if before is not None:
            before(len(results))
        scribble_shared(cp)
        fn(*args, out)
        for name, host, dev, snapshot in kept:
            # Compared on the device, bit for bit; only a changed buffer comes to the host
            if not _same_bits(dev, snapshot):
                raise api.CheckError(input_changed(name, host, api.to_host(dev)))
        results.append(api.to_host(buf))
    return np.stack(results)


# Shared memory is not cleared between kernels: a block reads what the last block on its SM left.
# What that is depends on what ran before, and is often zero on a quiet GPU, so a kernel that
# never initialises its shared memory (a histogram's bins, a tree's padding) can pass by luck.
# Every SM's shared memory is filled with this pattern before each checked call: a NaN as a
# float, a large int, nonzero in every byte (the same bits freed.py fills freed memory with).
SCRIBBLE_BITS = POISON
_SCRIBBLE_SOURCE = r"""
extern "C" __global__ void gpulab_scribble_shared(unsigned int bits, int words) {
    extern __shared__ unsigned int smem[];
    volatile unsigned int* s = smem;  // volatile: stores nothing reads are still made
    for (int i = threadIdx.x; i < words; i += blockDim.x) s[i] = bits;
}
"""
_scribbler: list[Any] = []  # (kernel, blocks, bytes), compiled once a process


def scribble_shared(cp: Any) -> None:
    """Fill the shared memory of every SM with SCRIBBLE_BITS (a few blocks an SM, each with the
    most dynamic shared memory a block may take). Not on the CUDA emulator, whose shared arrays
    keep what the last block left by design."""
    raw = getattr(cp, "RawKernel", None)  # NumPy for the tests' fake device arrays
    if raw is None or raw.__module__.startswith("gpulab."):
        return
    if not _scribbler:
        attrs = cp.cuda.Device().attributes
        size = int(attrs.get("MaxSharedMemoryPerBlockOptin", 0)) or 48 * 1024
        kernel = cp.RawKernel(_SCRIBBLE_SOURCE, "gpulab_scribble_shared")
        kernel.max_dynamic_shared_size_bytes = size
        _scribbler.append((kernel, 2 * int(attrs["MultiProcessorCount"]), size))
    kernel, blocks, size = _scribbler[0]
    kernel((blocks,), (1024,), (np.uint32(SCRIBBLE_BITS), np.int32(size // 4)), shared_mem=size)


def _same_bits(a: Any, b: Any) -> bool:
    """Whether two arrays of one dtype hold the same bits (NaN equals NaN, -0 is not +0)."""
    kind = _bits(a.dtype)
    return bool(_xp(a).array_equal(a.view(kind), b.view(kind)))


def _bits(dtype: Any) -> Any:
    """The unsigned integer type of `dtype`'s size: its values compared as bits."""
    return {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[np.dtype(dtype).itemsize]


def _touched(part: np.ndarray, value: Any = None) -> np.ndarray:
    """Where a guard no longer holds its fill (`value`, default the outputs' poison)."""
    if value is None:
        poison = api.poison(1, part.dtype)[0]
        return (part != poison) if part.dtype.kind in "iub" else ~np.isnan(part)
    fill = np.asarray(value, part.dtype).reshape(1).view(np.uint8)
    return part.view(np.uint8).reshape(part.size, -1) != fill


def input_changed(name: str, want: np.ndarray, buf: np.ndarray) -> str:
    """Why a guarded input buffer is not what was handed over ('' when it is)."""
    g = guard_size(want.size)
    head, body, tail = buf[:g], buf[g : g + want.size], buf[g + want.size :]
    fill = input_guard(want.dtype)
    for side, part, offset in (("before the start", head, -g), ("past the end", tail, want.size)):
        touched = _touched(part, fill).any(axis=1)
        if touched.any():
            k = int(np.argmax(touched))
            return (
                f"your kernel wrote {side} of {name}: element {offset + k} was set to "
                f"{part[k].item()!r} (a bounds check missing?)"
            )
    flat = want.reshape(-1)
    kind = _bits(flat.dtype)
    same = body.view(kind) == flat.view(kind)
    if not same.all():
        k = int(np.argmin(same))
        return (
            f"your kernel changed its input {name}: element {k} was {flat[k].item()!r}, now "
            f"{body[k].item()!r} (inputs are read-only: write only the output)"
        )
    return ""


def compare_guarded(
    want: np.ndarray,
    got: Any,
    *,
    name: str = "out",
    rtol: float | None = None,
    atol: float | None = None,
) -> api.Mismatch | None:
    """Compare each run's output with `want`, after checking nothing was written before its
    start or past its end."""
    runs = api.to_host(got)
    want = np.ascontiguousarray(want)  # once, not once per run (a transpose's reference is not)
    total = want.size
    g = guard_size(total)
    for r, buf in enumerate(runs):
        where = f"run {r + 1} of {len(runs)}: " if len(runs) > 1 else ""
        for side, part, offset in (
            ("before the start", buf[:g], -g),
            ("past the end", buf[g + total :], total),
        ):
            touched = _touched(part)
            if touched.any():
                k = int(np.argmax(touched))
                return api.Mismatch(
                    f"{where}wrote {side}: element {offset + k} of {name} was set to "
                    f"{part[k].item()!r}, but {name} has only {total} elements (missing "
                    "bounds check? a negative index?)",
                    index=offset + k,
                    got=part[k].item(),
                )
        bad = api.compare_arrays(
            want, buf[g : g + total].reshape(want.shape), name=name, rtol=rtol, atol=atol
        )
        if bad is not None:
            bad.message = where + bad.message
            if isinstance(bad.got, float) and abs(bad.got) >= _GUARD_SIZED:
                bad.message += (
                    " (a value that large comes from the guard around an input: a read before "
                    "its start or past its end?)"
                )
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


_SM_COUNT_ATTRIBUTE = 16  # cudaDevAttrMultiProcessorCount


def sm_count() -> int:
    """The current CUDA device's streaming multiprocessor count, asked of the driver.

    Not `Device().attributes`: CuPy keeps that dict per device and hands the same one out on
    every read, so a file that wrote a larger count into it at import raised the fixed-grid
    rule's limit (an H200 passed grid-stride's wrong/sm-count-raised.py). The runtime call
    returns a fresh int; its module is in the Guard, so a rebinding is put back first."""
    import cupy as cp

    runtime = cp.cuda.runtime
    return int(runtime.deviceGetAttribute(_SM_COUNT_ATTRIBUTE, runtime.getDevice()))


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
    mutate: bool = True,
) -> api.TimingSpec:
    """A TimingSpec whose inputs are a tuple passed to fn as positional arguments, the output
    last. Every timed call is checked on the device: before it, the output is poisoned and (with
    `mutate`) every element of every input array is rewritten (gpulab.exercises.fresh), so no
    answer or part of one kept from an earlier call is right; after it, the output is compared
    with the library's on the same inputs (`library(io)` writes io[-1] or returns its answer),
    and only a mismatch is copied to the host to be described."""
    scratch: dict[int, Any] = {}
    refresh = Refresher()

    def prepare(io: Any) -> None:
        out = io[-1]
        out.fill(api.poison(1, out.dtype)[0])
        # as before a checked call, so what shared memory holds cannot tell the two apart
        scribble_shared(_xp(out))
        if mutate:
            refresh(*(x for x in io[:-1] if hasattr(x, "shape") and getattr(x, "size", 0) > 1))

    def reference(io: Any) -> Any:
        mine = io[-1]
        buf = scratch.get(id(io))
        if buf is None:
            buf = scratch[id(io)] = _xp(mine).empty_like(mine)
        theirs = library((*io[:-1], buf))
        return (buf if theirs is None else theirs).reshape(mine.shape)

    def check_call(io: Any, returned: Any) -> str | None:
        mine = io[-1]
        theirs = reference(io)
        xp = _xp(mine)
        if mine.dtype.kind in "iub":
            bad = int(xp.count_nonzero(mine != theirs))
        else:
            bad = int(xp.count_nonzero(~xp.isclose(mine, theirs, rtol=rtol, atol=atol)))
        if not bad:
            return None
        # Described on the host, only when wrong: the scan names the first wrong element
        why = api.compare_arrays(api.to_host(theirs), api.to_host(mine), rtol=rtol, atol=atol)
        text = why.message if why is not None else f"{bad} elements differ"
        return f"the output differs from {library_name}: {text}"

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
        prepare=prepare,
        check_call=check_call,
        # the library's answer is taken on the inputs after the call: they must be as handed
        inputs=lambda io: [x for x in io[:-1] if hasattr(x, "shape") and getattr(x, "size", 0) > 1],
    )


def _xp(x: Any) -> Any:
    """The array module of `x`: CuPy for a device array, NumPy for the tests' fake."""
    if type(x).__module__.startswith("cupy"):
        import cupy

        return cupy
    return np


def nonzero_ints(rng: np.random.Generator, low: int, high: int, size: Any) -> np.ndarray:
    """Integers in [low, high] without 0 (int64): exact in float32 sums while they stay small."""
    v = rng.integers(low, high, size=size, endpoint=True)
    return np.where(v == 0, 1, v)


# A lane-to-lane move in CUDA C: the shuffle intrinsics, the integer warp reduction, and
# cooperative groups' tile shuffles and reduce.
_SHUFFLE_CALL = re.compile(
    r"__shfl(?:_up|_down|_xor)?_sync\s*\(|__reduce_\w+_sync\s*\(|\.shfl(?:_up|_down|_xor)?\s*\("
    r"|\b(?:cg|cooperative_groups)::reduce\s*\("
)


def launch_code(launch: Any, fallback: str) -> str:
    """The CUDA C of one launch's kernel: the RawKernel's own source, else `fallback` (a
    RawModule's function does not keep it: the learner's whole file, then)."""
    inner = getattr(getattr(launch, "wrapper", None), "inner", None)
    code = getattr(inner, "code", None)
    return code if isinstance(code, str) else fallback


def uses_warp_shuffles(code: str) -> bool:
    """Whether a kernel source, comments stripped, moves values between lanes with a warp
    shuffle: a `__shfl_*_sync` or `__reduce_*_sync` call, a tile's `shfl*` or `cg::reduce`."""
    text = re.sub(r"//[^\n]*|/\*.*?\*/", "", code, flags=re.S)
    return bool(_SHUFFLE_CALL.search(text))


def launch_shuffles(launch: Any, code: str) -> bool:
    """Whether one launch's kernel moves values between lanes: read from its compiled PTX where
    NVRTC can compile it (what ran, not what the source says), else from `code`, its source."""
    compiled = uses_shuffles(launch)
    return uses_warp_shuffles(code) if compiled is None else compiled


def shared_bytes(launch: Any) -> int | None:
    """Static plus dynamic shared memory of one launch (None: the static part is unknown)."""
    static = launch.shared_static()
    return None if static is None else static + int(launch.shared_dynamic)


def dims(d: Any) -> tuple[int, ...]:
    """A launch's grid or block as CuPy takes it (an int, a tuple; None: 1), as a tuple."""
    return tuple(int(x) for x in d) if isinstance(d, tuple | list) else (int(d or 1),)


def xy(d: Any) -> tuple[int, int]:
    """(x, y) of a launch's grid or block (y 1 where it has one dimension)."""
    v = dims(d)
    return v[0], (v[1] if len(v) > 1 else 1)


def block_threads(launch: Any) -> int:
    return int(np.prod(dims(launch.block), dtype=np.int64))


def launch_threads(launch: Any) -> int:
    """Threads one launch started: its grid's blocks times its block's threads (an
    ElementwiseKernel or ReductionKernel, whose launch CuPy sizes, counts as one)."""
    if launch.grid is None and launch.block is None:
        return 1
    return int(np.prod(dims(launch.grid), dtype=np.int64)) * block_threads(launch)


def each_call(ctx: api.Context, since: int, rule: Callable[[list[Any]], str | None]) -> None:
    """Apply `rule` to the launches of every call the learner's function made since the watch
    held `since` calls; CheckError with the first reason it gives. Read from what ran: the
    launches the watch recorded, not the source."""
    watch = getattr(ctx, "watch", None)
    for record in watch.calls[since:] if watch is not None else []:
        if record.launches:  # no kernel of theirs: OWN_KERNEL says so
            why = rule(record.launches)
            if why:
                raise api.CheckError(why)


def calls_so_far(ctx: api.Context) -> int:
    watch = getattr(ctx, "watch", None)
    return len(watch.calls) if watch is not None else 0


def parallel_rule(n: int, least: int = 256) -> Callable[[list[Any]], str | None]:
    """A scan or histogram of n >= 16 * least values done by fewer than `least` threads in all:
    one thread walking the array is a CPU loop on a GPU, not the pattern the exercise teaches."""

    def rule(launches: list[Any]) -> str | None:
        started = sum(launch_threads(la) for la in launches)
        if n >= 16 * least and started < least:
            return (
                f"your launches started {started} thread(s) for {n:,} values: a thread walking "
                "the array is a CPU loop on the GPU; this exercise teaches the parallel "
                f"pattern (blocks of threads working together, at least {least} threads here)"
            )
        # On the emulator, from what ran: threads started and left idle while one walks the
        # array (on a GPU the compiled code cannot say which thread works; its time does). The
        # busiest thread of each launch, added up over the call's launches: a red team cut the
        # one-thread walk into 64 launches of a thread each, each carrying the total to the next
        busiest = _busiest_over_launches(launches)
        if n >= 16 * least and busiest > n // 16:
            return (
                f"one thread of your launches touched {busiest:,} values in global memory (the "
                f"busiest of each launch, added over them), for "
                f"{n:,} values in all: a thread walking the array is a CPU loop on the GPU, "
                "however many threads were started; this exercise teaches the parallel "
                "pattern (the work shared out among the block's threads)"
            )
        return None

    return rule


def _busiest_over_launches(launches: list[Any]) -> int:
    """The global accesses of each launch's busiest thread, added over the launches that ran
    on the emulator: the longest walk one thread a launch makes in the call, in sequence."""
    return sum(la.ran.busiest_thread for la in launches if getattr(la, "ran", None))


def walker_rule(n: int, per: int, how: str) -> Callable[[list[Any]], str | None]:
    """On the emulator: no thread may make more than a sixteenth of the call's `per` global
    accesses an element over n elements (from 1,024 of them). One thread walking the whole
    array while the rest of the grid idles keeps every launch rule and skips the work sharing
    the exercise teaches (`how`). On a GPU the compiled code cannot say which thread works; its
    time grades it. The emulator runs an ElementwiseKernel over a grid as CuPy does, so one
    whose single element loops over the array is asked too."""

    def rule(launches: list[Any]) -> str | None:
        busiest = _busiest_over_launches(launches)
        if n >= 1024 and busiest > per * n // 16:
            return (
                f"one thread of your launches made {busiest:,} global accesses for {n:,} "
                f"elements: a thread walking the array is a CPU loop on the GPU; {how}"
            )
        return None

    return rule


def row_rule(cols: int) -> Callable[[list[Any]], str | None]:
    """Rows of `cols` >= 1024 values each walked by one thread (reduction-kernel: a RawKernel
    with a thread a row, looping over it, is the ElementwiseKernel loop the check refuses by its
    kind, in another kind; softmax-rows' ladder starts there, so it has no such rule). On the
    emulator, from what ran: the busiest thread touched a quarter of a row or more,
    where a block (or a warp) a row leaves each thread a few dozen values. On a GPU the compiled
    code cannot say which thread works; its time does."""

    def rule(launches: list[Any]) -> str | None:
        busiest = _busiest_over_launches(launches)
        if cols >= 1024 and busiest > cols // 4:
            return (
                f"one thread of your launches touched {busiest:,} values in global memory, for "
                f"rows of {cols:,}: a thread walking a row is a CPU loop on the GPU; this "
                "exercise teaches the row reduced in parallel (a block or a warp a row, its "
                "threads sharing the row's values)"
            )
        return None

    return rule


def written_once_rule(nbytes: int) -> Callable[[list[Any]], str | None]:
    """On the emulator, which counts the bytes each launch stores into global memory: a map
    whose spare threads do nothing stores its output's `nbytes` once. An index clamped
    (`min(i, n - 1)`) or wrapped (`i % n`) in place of a guard, or a block of 32 threads all
    writing one element of the tail, stores more: the right answer, with no thread left idle.
    On a GPU no launch has the count; the time grades the spare writes there."""

    def rule(launches: list[Any]) -> str | None:
        counted = [la.ran.global_written for la in launches if getattr(la, "ran", None)]
        if sum(counted) <= nbytes:
            return None
        return (
            f"your kernels stored {sum(counted):,} bytes into global memory for an output of "
            f"{nbytes:,}: threads past the end wrote anyway (an index clamped or wrapped, "
            "several threads writing one element); a spare thread must do nothing: if (i < n)"
        )

    return rule


def global_reads_rule(most: int, what: str) -> Callable[[list[Any]], str | None]:
    """On the emulator, which counts the bytes each launch loads from global memory: a tiled
    kernel loads each input value once a tile and reuses it from there, so a call loads at
    most `most` bytes (a few times what plain tiles would). A kernel that stages a tile it then
    ignores (or stages one operand and reads the other at every use) loads about what the
    naive kernel does, however much shared memory it touches. On a GPU no launch has the count
    (Nsight Compute's would); the compiled code's rules and the time stand there."""

    def rule(launches: list[Any]) -> str | None:
        counted = [la.ran.global_read for la in launches if getattr(la, "ran", None)]
        if sum(counted) <= most or not _touched_shared(launches):
            return None  # no shared memory at all: the shared-memory rule names that
        return (
            f"your kernels loaded {sum(counted):,} bytes from global memory for {what}, more "
            f"than a tiled kernel loads ({most:,} at most): the values are read from global "
            "memory at each use, not reused from the tiles"
        )

    return rule


def _address(a: Any) -> int:
    """The device address of an array's first element (CuPy's, or the emulator's NumPy)."""
    data = getattr(a, "data", None)
    ptr = getattr(data, "ptr", None)
    return int(ptr) if isinstance(ptr, int) else int(a.ctypes.data)


def input_reads_rule(
    spared: Sequence[int], most: int, what: str
) -> Callable[[list[Any]], str | None]:
    """On the emulator, the bytes a call's launches loaded through each allocation they were
    handed but those at `spared` (the addresses of a small input that may be read at every
    use, conv1d's weights; from run_guarded's `spans`): at most `most` through any one of
    them, what a tile that loads each value a few times reads. A kernel that tiles the weights
    and reads x at every product (or a copy of x it made) loads x once a product. On a GPU no
    launch has the count."""

    def rule(launches: list[Any]) -> str | None:
        loaded: dict[tuple[int, int], int] = {}
        for la in launches:
            ran = getattr(la, "ran", None)
            for lo, hi, read in getattr(ran, "region_reads", ()):
                if not any(lo <= a < hi for a in spared):
                    loaded[(lo, hi)] = loaded.get((lo, hi), 0) + read
            # loads through an address handed as a number: an array of its own
            loaded[(0, 0)] = loaded.get((0, 0), 0) + getattr(ran, "stray_read", 0)
        worst = max(loaded.values(), default=0)
        if worst <= most or not _touched_shared(launches):
            return None  # no shared memory at all: the shared-memory rule names that
        return (
            f"your kernels loaded {worst:,} bytes of one array from global memory for {what}, "
            f"more than a tiled kernel loads ({most:,} at most): its values are read from "
            "global memory at each use, not reused from a tile"
        )

    return rule


def coalesced_rule(least: float = 0.5) -> Callable[[list[Any]], str | None]:
    """On the emulator, which compares each lane's k-th global load (and store) with its left
    neighbour's in the warp: at least `least` of those pairs must lie within 16 bytes of each
    other, loads and stores alike, as a warp's access coalesced into one run does. A transpose
    that stages a tile for show and writes out[x][y] from its registers scatters every store a
    row apart. On a GPU the pattern needs Nsight Compute's counters; the time grades it."""

    def rule(launches: list[Any]) -> str | None:
        ran = [la.ran for la in launches if getattr(la, "ran", None)]
        if not _touched_shared(launches):
            return None  # no shared memory at all: the shared-memory rule names that
        for kind, pairs, near in (
            ("loads from", sum(r.load_pairs for r in ran), sum(r.load_near for r in ran)),
            ("stores to", sum(r.store_pairs for r in ran), sum(r.store_near for r in ran)),
        ):
            if pairs and near < least * pairs:
                return (
                    f"your kernels' {kind} global memory are scattered: of {pairs:,} pairs of "
                    f"neighbouring lanes' {kind.split()[0]}, {near:,} lie within 16 bytes of "
                    "each other; through the tile a warp reads a row of a and writes a row of "
                    "out, each one contiguous run (coalesced)"
                )
        return None

    return rule


def _touched_shared(launches: list[Any]) -> bool:
    return any(la.ran.shared_touches for la in launches if getattr(la, "ran", None))


def tile_traffic_rule(values: int, what: str) -> Callable[[list[Any]], str | None]:
    """On the emulator, which counts each launch's shared-memory accesses as they run: a tiled
    kernel moves at least `values` values through shared memory in a call (each element of a
    transpose in and out of its tile; each of a matmul's K products' operands read from a
    tile). A kernel that shares one index through shared memory and does the work from global
    memory touches it a few times a block. On a GPU the counts are not read (no launch has
    them); the compiled code's rule stands there."""

    def rule(launches: list[Any]) -> str | None:
        counted = [la.ran.shared_touches for la in launches if getattr(la, "ran", None)]
        if not sum(counted) or sum(counted) >= values:
            return None  # none at all: the shared-memory rule names that, in its own words
        return (
            f"your kernels touched shared memory {sum(counted):,} times for {what}: a tiled "
            f"kernel moves its {what} through its tiles (at least {values:,} shared accesses); "
            "the values are read from global memory instead"
        )

    return rule
