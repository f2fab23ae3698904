"""The contract between the grader and an exercise's `check.py` (package data, one folder each).

An exercise folder under `gpulab/exercises/catalog/<NN-id>/` holds:

- `exercise.md`: YAML front matter (id, title, order, lesson, needs, metric, grades, hints) and
  the statement in Markdown. `needs` is one of "cpu" (NumPy / torch, runs anywhere), "gpu"
  (torch with CUDA), "cupy" (a GPU and CuPy); a list of strings is allowed.
- `starter.py`: what the learner is given, with a clear `TODO`.
- `solution.py`: our reference solution.
- `wrong/*.py`: known-wrong solutions. Each file's first line is a comment
  `# expect: <text>`; the grader must reject it with a message that contains `<text>`.
- `check.py`: the checker, a plain module with these names (only `ENTRY`, `cases`, `expected`
  and `run` are required):

    ENTRY: str                       the function the learner's module must define
    cases(ctx) -> list[Case]         inputs drawn from ctx.rng; edge sizes first, then a big one
    expected(case, ctx) -> Any       the reference, computed BEFORE the learner's code is loaded
                                     (float64 or exact; host NumPy arrays or plain values)
    run(fn, case, ctx) -> Any        calls the learner's `fn` with device copies of the inputs
                                     and poisoned outputs; returns the result on the host
    compare(want, got, case, ctx) -> Mismatch | None      default: compare_arrays
    timing(fn, ctx) -> TimingSpec | None                  after every case passed; optional
    untimed(ctx) -> str              optional: when timing() gave None, why this machine gives
                                     no speed grade (appended to the passing verdict's line)

`exercise.md` may also set `time_limit` (seconds for the whole check, default 60) and `summary`
(one line for the list). Folders under $GPULAB_EXERCISES_PATH (os.pathsep-separated) are loaded
beside the package's own, for contributors and tests.

The grader (gpulab/exercises/run_check.py) owns the order: cases -> every expected -> load the
learner's module fresh -> run + compare per case -> timing. It binds the helpers below before the
learner's module is imported, so later monkey-patching of NumPy by the learner does not change
the comparison.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from gpulab.core.memory import device_queries_paused
from gpulab.exercises.compare import max_error as _max_error
from gpulab.exercises.compare import scan as _scan

# Sizes every 1-D check should cover: tiny, around a warp, around a block, around two blocks.
EDGE_SIZES: tuple[int, ...] = (1, 2, 31, 33, 1023, 1025)

_np_asarray = np.asarray
_np_unravel = np.unravel_index


class CheckError(Exception):
    """The learner's code broke the contract (wrong signature, wrong type); str() is one line.
    `final`: the remaining cases would only repeat it, at a cost (ranks that deadlock wait out
    the deadline in every case), so the check stops there."""

    final = False


@dataclass
class Context:
    """What a check may use. Built by the grader, never by the learner's code."""

    rng: np.random.Generator
    seed: int
    gpu: bool  # a CUDA device is usable in this worker
    cupy: bool  # CuPy is importable and sees the device
    device: str  # torch device string: "cuda:0" or "cpu"
    device_index: int = 0
    fill_bytes: int = 256 << 20  # a size that fills the device's bandwidth (bytes in all)
    quick: bool = False  # tests: smaller big case, fewer timing repeats
    # Added compatibly: the correctness cases' big size (bytes in all), smaller than the timing's
    # so that a check answers in a fraction of a second; still millions of elements, thousands
    # of blocks, many waves over every SM. `phase` is "cases" while cases() runs, "timing" while
    # timing() runs (the grader sets it), and big() picks the budget by it.
    check_bytes: int = 32 << 20
    phase: str = "timing"
    # What the learner's code launched (gpulab.exercises.own_work.Watch, set by the grader):
    # `watch.calls[-1].launches` are the learner's kernel launches of the last call, with their
    # grid, block and shared memory, for a check whose rule is about the launch itself.
    watch: Any = None
    # Our reference solution's ENTRY function, loaded once per process (set by the grader): a
    # check whose rule is a ratio ("faster than eager by what our solution gains") times it in
    # the same rounds as the learner's, on this GPU, instead of asking for a constant
    reference: Callable[[], Any] | None = None
    # Lines the grader adds to a passing verdict: what this machine could not show (a ratio
    # rule our own solution cannot meet here, so only correctness was graded)
    notes: list[str] = field(default_factory=list)

    @contextmanager
    def timed_calls(self) -> Iterator[None]:
        """Calls of the learner's function inside this block are timed: the grader's per-call
        bookkeeping (putting back what a call rebinds, the early-return probe) waits for the
        block's end, as for the grader's own timed calls, so a check that times the learner's
        function against its own code times both bare."""
        watch = self.watch
        if watch is None:
            yield
            return
        was, watch.timing = watch.timing, True
        try:
            yield
        finally:
            watch.timing = was
            if watch.after_call is not None:
                watch.after_call()

    def big(self, bytes_per_element: int, arrays: int = 1, cap: int = 1 << 28) -> int:
        """An element count that fills the device: `arrays` arrays of that element size, about
        fill_bytes in all while timing (check_bytes while drawing the cases; 4 MiB when quick),
        never more than `cap`."""
        if self.quick:
            total = 4 << 20
        else:
            total = self.check_bytes if self.phase == "cases" else self.fill_bytes
        return int(max(1, min(cap, total // max(1, bytes_per_element * arrays))))


@dataclass
class Case:
    """One input an exercise check runs the learner's function on, with the name a person reads."""

    name: str  # what a person reads: "n=33 (not a multiple of the block size)"
    args: dict[str, Any]  # the inputs, host NumPy arrays or plain values
    meta: dict[str, Any] = field(default_factory=dict)  # anything else the check wants to keep


@dataclass
class Mismatch:
    """Why a case failed, in words a learner can act on."""

    message: str  # one line: "out[1024] = nan, expected 3.25 (never written?)"
    index: Any = None  # the first wrong index (int or tuple), if there is one
    expected: Any = None
    got: Any = None
    max_error: float | None = None
    wrong: int | None = None  # how many elements are wrong, if counted

    def to_dict(self) -> dict[str, Any]:
        """The mismatch as JSON-ready data (NumPy scalars made plain)."""

        def plain(v: Any) -> Any:
            if isinstance(v, np.generic):
                return v.item()
            if isinstance(v, tuple):
                return [plain(x) for x in v]
            return v

        return {k: plain(v) for k, v in self.__dict__.items()}


@dataclass
class TimingSpec:
    """How to time a correct solution beside the library path, on inputs that fill the GPU.

    `setup(i)` builds the i-th input set on the device (the grader rotates several so the L2
    cache does not flatter a memory-bound kernel); `learner(inputs)` and `library(inputs)` each run
    one call on those inputs. `work` is bytes (metric GB/s: every input read once, every output
    written once) or floating-point operations (TFLOP/s) per call.
    """

    setup: Callable[[int], Any]
    learner: Callable[[Any], Any]
    library: Callable[[Any], Any] | None
    library_name: str
    work: float
    metric: str  # "GB/s" or "TFLOP/s"
    ceiling: str  # a calibrated figure: "copy", "h2d", "d2h" or "matmul:<dtype>"
    sync: str = "none"  # "cupy", "torch" or "none" (gpulab.core.timing.SYNC_KINDS)
    sets: int = 4  # input sets to rotate among
    note: str = ""  # what `work` counts, shown to the learner
    # Optional (added after the first version): called after timing with the input set of the
    # last timed call; a message (str or Mismatch) means the timed calls did not compute the
    # answer (code that does the work only at the check's sizes), and the check fails.
    verify: Callable[[Any], Mismatch | str | None] | None = None
    # Every timed call is work that was done. `prepare(inputs)` runs untimed before each call
    # into the learner's code on that input set: it poisons the outputs (and may change an input
    # element, so a cached answer goes stale). `check_call(inputs, returned)` runs untimed after
    # the call's device work finished, with what the learner's function returned: a message
    # means this call's output is wrong. The grader checks every timed call on a GPU and a
    # random sample of the repeated ones on a CPU, where a check costs as much as the call.
    prepare: Callable[[Any], None] | None = None
    check_call: Callable[[Any, Any], Mismatch | str | None] | None = None
    # Optional: False where the host's cost of a call is part of what the exercise measures
    # (side streams, graphs): no spin is queued ahead of the start events (gpulab.core.lead).
    lead: bool = True
    # Optional: True where check_call costs next to nothing (counts read from hooks), so every
    # timed call is checked on a CPU too, not a random third
    check_every: bool = False
    # Optional: the arrays of an input set that a call must leave as it found them (not the
    # outputs). check_call compares with the library on the inputs as they are after the call,
    # so a call that zeroed its input made the expected answer trivial (tree-reduction: gold
    # for a memset and a 0 returned); the grader compares a random sample of each one's
    # elements across every timed call (gpulab.exercises.speed)
    inputs: Callable[[Any], Sequence[Any]] | None = None


def tolerance(dtype: Any) -> tuple[float, float]:
    """(rtol, atol) for comparing a result of this dtype with a float64 reference."""
    kind = np.dtype(dtype)
    if kind.kind in "iub":
        return (0.0, 0.0)
    if kind == np.float16:
        return (1e-2, 1e-3)
    if kind == np.float32:
        return (1e-5, 1e-6)
    return (1e-10, 1e-12)


def poison(shape: Any, dtype: Any, xp: Any = np) -> Any:
    """An output buffer full of values no correct kernel writes: NaN for floats, a sentinel for
    integers, so an element the learner never wrote fails the comparison."""
    kind = np.dtype(dtype)
    if kind.kind == "f":
        return xp.full(shape, np.nan, dtype=dtype)
    if kind.kind in "iu":
        sentinel = np.iinfo(kind).max - 7
        return xp.full(shape, sentinel, dtype=dtype)
    return xp.full(shape, True, dtype=dtype)


def to_host(x: Any) -> np.ndarray:
    """A NumPy array from a NumPy, CuPy or torch value (copies device memory to the host)."""
    if hasattr(x, "get") and type(x).__module__.startswith("cupy"):
        return x.get()
    if type(x).__module__.startswith("torch"):
        return x.detach().cpu().numpy()
    return _np_asarray(x)


def compare_arrays(
    want: np.ndarray,
    got: Any,
    *,
    name: str = "out",
    dtype: Any = None,
    rtol: float | None = None,
    atol: float | None = None,
) -> Mismatch | None:
    """None when `got` matches `want` (float64 or exact) within the dtype's tolerance; else the
    first wrong index, expected vs got, the max error and how many elements are wrong."""
    got_h = to_host(got)
    want_h = _np_asarray(want)
    if got_h.shape != want_h.shape:
        return Mismatch(f"{name} has shape {tuple(got_h.shape)}, expected {tuple(want_h.shape)}")
    if dtype is not None and got_h.dtype != np.dtype(dtype):
        return Mismatch(f"{name} has dtype {got_h.dtype}, expected {np.dtype(dtype)}")
    d_rtol, d_atol = tolerance(got_h.dtype)
    rtol = d_rtol if rtol is None else rtol
    atol = d_atol if atol is None else atol
    wrong, flat = _scan(got_h, want_h, rtol, atol)
    if not wrong:
        return None
    idx = tuple(int(i) for i in _np_unravel(flat, got_h.shape)) if got_h.ndim > 1 else flat
    g_v, w_v = got_h.reshape(-1)[flat].item(), want_h.reshape(-1)[flat].item()
    max_err = _max_error(got_h, want_h)
    where = f"{name}[{', '.join(map(str, idx)) if isinstance(idx, tuple) else idx}]"
    hint = " (never written?)" if isinstance(g_v, float) and g_v != g_v else ""
    return Mismatch(
        f"{where} = {g_v!r}, expected {w_v!r}{hint}; {wrong} of {got_h.size} wrong",
        index=idx,
        expected=w_v,
        got=g_v,
        max_error=max_err,
        wrong=wrong,
    )


def no_device_queries() -> Any:
    """A context in which the worker's memory sampler reads no device figures: wrap a call that
    may capture a CUDA graph, which a cudaMemGetInfo from another thread would break."""
    return device_queries_paused()
