"""What a training step did, read from torch.profiler: device syncs, kernels, the top operators.

One reader for the three places that profile a step: the `profile-step` experiment, the
`profile-step` exercise's check and `gpulab ex profile`. Each step runs inside a
`record_function` range, so what is counted per step is what happened inside those ranges:

- syncs: CUDA runtime calls that block the host until the GPU has finished
  (`cudaStreamSynchronize`, `cudaDeviceSynchronize`, `cudaEventSynchronize`, a blocking
  `cudaMemcpy`), the calls `.item()`, `float(t)`, `bool(t)`, `print(t)` and `.cpu()` end in;
- readbacks: `aten::_local_scalar_dense`, the operator every Python-number read of a tensor
  goes through (on the CPU as on a GPU, so a CPU run can still count the reads that would
  sync on a GPU);
- sized: operators whose output size depends on the data (`aten::nonzero`, under `t[mask]` and
  `torch.where(mask)`; `masked_select`; `unique`): on a GPU each copies that size to the host
  and waits for it, a sync the CPU run counts by name;
- kernels: device-side kernel activities (memcpy and memset apart), on a GPU;
- ops: operators that do work (views, allocation and metadata operators left out), which on a
  CPU stand in for the launches a GPU would see.

Importing this module imports no torch: the profiler is imported by the functions that run it.
"""

from __future__ import annotations

import contextlib
import statistics
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

STEP_RANGE = "gpulab: step"
SYNC_CALLS = frozenset(
    {
        "cudaStreamSynchronize",
        "cudaDeviceSynchronize",
        "cudaEventSynchronize",
        "cudaMemcpy",
        "cuStreamSynchronize",
        "cuCtxSynchronize",
        "cuEventSynchronize",
        "cuMemcpyDtoH_v2",
    }
)
READBACKS = frozenset({"aten::_local_scalar_dense"})
# Operators whose output size depends on the data: on a GPU each waits for the device to learn it
SIZED_BY_DATA = frozenset(
    {
        "aten::nonzero",
        "aten::masked_select",
        "aten::_unique",
        "aten::_unique2",
        "aten::unique_dim",
        "aten::unique_consecutive",
        "aten::unique_dim_consecutive",
    }
)
# Where a readback comes from, named in the table and in a check's message
READBACK_CALLERS = (
    "aten::item",
    "aten::is_nonzero",
    "aten::_local_scalar_dense",
    *sorted(SIZED_BY_DATA),
)
# Operators that launch nothing on a GPU: views, metadata, allocation (an empty tensor's memory
# comes from the caching allocator without a kernel), the autograd bookkeeping.
NO_KERNEL = frozenset(
    {
        "aten::view",
        "aten::_unsafe_view",
        "aten::reshape",
        "aten::t",
        "aten::transpose",
        "aten::permute",
        "aten::expand",
        "aten::slice",
        "aten::select",
        "aten::as_strided",
        "aten::alias",
        "aten::detach",
        "aten::detach_",
        "aten::empty",
        "aten::empty_like",
        "aten::empty_strided",
        "aten::resize_",
        "aten::unsqueeze",
        "aten::squeeze",
        "aten::lift_fresh",
        "aten::result_type",
        "aten::to",
        "aten::_to_copy",
        "aten::numpy_T",
        "aten::contiguous",
        "aten::item",
        "aten::_local_scalar_dense",
        "aten::is_nonzero",
        "aten::size",
        "aten::stride",
        "aten::split",
        "aten::unbind",
        "aten::chunk",
        "aten::narrow",
        "aten::flatten",
        "aten::_reshape_alias",
    }
)


@dataclass
class OpRow:
    """One operator of the table, per step: calls, self host time, self device time."""

    name: str
    calls: float
    cpu_us: float
    device_us: float


@dataclass
class StepTrace:
    """What `steps` profiled steps did, per step."""

    steps: int
    gpu: bool
    syncs: float | None  # None on a CPU: nothing there waits for a device
    readbacks: float
    kernels: float | None  # None on a CPU
    ops: float
    step_cpu_us: float  # host time inside the step ranges, per step
    sync_calls: dict[str, int] = field(default_factory=dict)  # name: count over all steps
    sized: float = 0.0  # operators whose output size depends on the data (SIZED_BY_DATA)
    rows: list[OpRow] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)  # where reads came from (_source_line)

    def to_dict(self) -> dict[str, Any]:
        out = dict(self.__dict__)
        out["rows"] = [r.__dict__ for r in self.rows]
        return out


def _device_us(evt: Any) -> float:
    for attr in ("self_device_time_total", "self_cuda_time_total"):
        value = getattr(evt, attr, None)
        if value is not None:
            return float(value)
    return 0.0


def _on_device(evt: Any) -> bool:
    return str(getattr(evt, "device_type", "CPU")).endswith("CUDA")


def _is_copy(name: str) -> bool:
    return name.startswith(("Memcpy", "Memset", "memcpy", "memset"))


def _python_call(name: str) -> bool:
    return name.startswith(("<built-in", "<frozen", "<")) or ".py(" in name


def _inside(t: float, spans: list[tuple[float, float]]) -> bool:
    return any(a <= t <= b for a, b in spans)


def _source_line(evt: Any, source: str) -> str:
    """Where in `source` (a file name) this operator was called: 'line 23' from a recorded
    stack, or, where torch records Python calls as events of their own (the parents of the
    operator), 'clip, defined at line 19': the function of that file, where it starts."""
    for frame in getattr(evt, "stack", None) or []:
        head = frame.split("(", 1)
        if len(head) == 2 and head[0].endswith(source):
            return f"line {head[1].split(')', 1)[0]}"
    parent = getattr(evt, "cpu_parent", None)
    while parent is not None:
        head = parent.name.split("(", 1)
        if len(head) == 2 and head[0].endswith(source) and "): " in head[1]:
            line, func = head[1].split("): ", 1)
            return f"{func}, defined at line {line}"
        parent = getattr(parent, "cpu_parent", None)
    return ""


@contextlib.contextmanager
def small_work(gpu: bool) -> Iterator[None]:
    """One intra-op thread on a CPU while the steps run: these matmuls are tiny, and on a busy
    machine threads that wait for each other made them ten times slower, and the table noise."""
    import torch

    if gpu:
        yield
        return
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


def profile_steps(
    step: Callable[[int], Any],
    steps: int,
    *,
    gpu: bool,
    source: str = "",
    top: int = 8,
) -> StepTrace:
    """Run `step(i)` for i in range(steps) under torch.profiler, each call in its own range,
    and read what happened inside the ranges. `source`: the file name whose lines the reads
    are traced to (recording Python stacks costs time: only then). Call it warm: the first
    steps of a process pay for library set-up and allocator growth that are not the step's."""
    import torch
    from torch.profiler import ProfilerActivity, profile, record_function

    acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if gpu else [])
    if gpu:
        torch.cuda.synchronize()  # nothing queued before the first step lands inside it
    reads = _PythonReads()
    with small_work(gpu), profile(activities=acts, with_stack=bool(source)) as prof:
        for i in range(steps):
            with record_function(STEP_RANGE), reads:
                step(i)
        if gpu:
            torch.cuda.synchronize()  # outside every range: not counted as the step's
    trace = read_trace(prof, steps, gpu=gpu, source=source, top=top)
    # .tolist(), .numpy() and float(t) read values into Python without the one operator the
    # profile sees (a scalar read's): counted here, by the calls themselves
    trace.readbacks = max(trace.readbacks, reads.count / max(1, steps))
    return trace


# Tensor methods that hand values to Python or NumPy: on a GPU each waits for the device.
# A tensor's storage too: no step needs one, and its Python side reads the bytes with no
# operator to see (a red team's profile-step wrote keep's storage into a BytesIO with
# UntypedStorage._write_file and built the row index from the bytes: no read counted on a CPU)
PYTHON_READS = frozenset(
    "torch.Tensor." + m
    for m in (
        "tolist",
        "numpy",
        "item",
        "__float__",
        "__int__",
        "__bool__",
        "__index__",
        "__array__",
        "__dlpack__",
        "untyped_storage",
        "storage",
    )
)


# Functions that make a tensor over memory they are handed: over a NumPy array or a Python
# buffer, what is copied into the tensor is in NumPy's hands (a read into Python, by another door)
HOST_WRAPS = frozenset({"torch.as_tensor", "torch.asarray"})


def host_memory(data: Any = None, *_args: Any) -> bool:
    """Whether torch.as_tensor / asarray is handed memory from outside torch: a NumPy array (or
    anything with the host array interface) or a Python buffer; not a tensor, not device memory."""
    if type(data).__module__.startswith("torch") or hasattr(data, "__cuda_array_interface__"):
        return False
    if hasattr(data, "__array_interface__") or type(data).__module__.startswith("numpy"):
        return True
    return isinstance(data, bytes | bytearray | memoryview) or type(data).__name__ == "array"


# Tensor methods that hand values to Python with no operator and no torch function to see: they
# run Python on each element (apply_, map_, map2_) or print the values (torch's printing turns
# the modes off itself). Watched by patching them while a step or a call runs.
# __dlpack__: NumPy's from_dlpack reads a tensor's values in place, with no operator to see
PYTHON_EXITS = ("apply_", "map_", "map2_", "__dlpack__", "__repr__", "__str__", "__format__")
PRINTS = ("__repr__", "__str__", "__format__")
# torch.serialization's ways to write a tensor's bytes (torch.save is its save)
SAVES = ("save", "_save", "_legacy_save")


# ids of the stand-ins a check's watch has put in place now (python_exits', and the refusals
# gpulab.exercises.refuse patches in): the check's own, each put back when its block ends
STAND_INS: set[int] = set()


def names_settled() -> None:
    """Have torch build its table of function names (torch.overrides.resolve_name, cached at its
    first use) before any stand-in is put in place: built while one stood in for a function,
    the table named the stand-in and not the function, and a later check's mode could not name
    what ran (profile-step missed a read after another exercise's check in the same worker)."""
    import torch.overrides  # deferred: called where torch is loaded already

    torch.overrides.resolve_name(torch.overrides.resolve_name)


def watching_exit(value: Any) -> bool:
    """Whether `value` is one of the check's stand-ins in place now (a Guard restoring torch's
    namespaces after a call made inside the watch names them as no one's change)."""
    return id(value) in STAND_INS


@contextlib.contextmanager
def python_exits(seen: Callable[[str], None], *, summarized: bool = False) -> Iterator[None]:
    """While the block runs, each call of a PYTHON_EXITS method calls `seen("torch.Tensor.m")`
    first (which may raise to refuse it). With `summarized`, printing is not an exit but is
    done with torch's default print options (a large tensor shows a few values and "..."),
    whatever the learner's code set: a debugging print works, the whole of a tensor does not
    leave as text. Put back as they were when the block ends."""
    import torch

    names_settled()
    cls = torch.Tensor
    own = {m: cls.__dict__[m] for m in PYTHON_EXITS if m in cls.__dict__}

    def watched(name: str, real: Any) -> Any:
        if summarized and name in PRINTS:

            def printed(self: Any, *args: Any, **kwargs: Any) -> Any:
                from torch._tensor_str import PRINT_OPTS

                kept = dict(vars(PRINT_OPTS))
                torch.set_printoptions(profile="default")
                try:
                    return real(self, *args, **kwargs)
                finally:
                    vars(PRINT_OPTS).update(kept)

            return printed

        def method(self: Any, *args: Any, **kwargs: Any) -> Any:
            seen(f"torch.Tensor.{name}")
            return real(self, *args, **kwargs)

        return method

    ours = {m: watched(m, getattr(cls, m)) for m in PYTHON_EXITS}
    for m, method in ours.items():
        setattr(cls, m, method)
    STAND_INS.update(id(method) for method in ours.values())
    # torch.save writes a tensor's bytes from C++, past every operator and method: a red team's
    # profile-step saved the mask to a BytesIO and read it in Python (no read counted)
    # DLPack's exports in C, no Tensor method on the way: a red team's profile-step handed
    # NumPy an object whose __dlpack__ returned torch.utils.dlpack.to_dlpack(keep) and read the
    # mask there (no read counted)
    doors = (
        (torch, "save", "torch.save"),
        *((torch.serialization, n, "torch.save") for n in SAVES),
        (torch._C, "_to_dlpack", "torch.utils.dlpack.to_dlpack"),
        (torch._C, "_to_dlpack_versioned", "torch.utils.dlpack.to_dlpack"),
        (torch.utils.dlpack, "to_dlpack", "torch.utils.dlpack.to_dlpack"),
    )
    saves = [
        (module, name, getattr(module, name), label)
        for module, name, label in doors
        if hasattr(module, name)
    ]

    def saving(real: Any, label: str) -> Any:
        def saved(*args: Any, **kwargs: Any) -> Any:
            seen(label)
            return real(*args, **kwargs)

        return saved

    for module, name, real, label in saves:
        setattr(module, name, stand_in := saving(real, label))
        STAND_INS.add(id(stand_in))
    try:
        yield
    finally:
        for module, name, real, _ in saves:
            STAND_INS.discard(id(getattr(module, name, None)))
            setattr(module, name, real)
        STAND_INS.difference_update(id(method) for method in ours.values())
        for m, method in ours.items():
            if cls.__dict__.get(m) is not method:
                continue  # put back already (a guard that restores torch.Tensor ran first)
            if m in own:
                setattr(cls, m, own[m])
            else:
                delattr(cls, m)


class _PythonReads:
    """A TorchFunctionMode (entered per step) counting the calls that read values into Python,
    and the Python exits no mode sees (PYTHON_EXITS)."""

    def __init__(self) -> None:
        self.count = 0
        self._mode: Any = None

    def __enter__(self) -> _PythonReads:
        from torch.overrides import TorchFunctionMode, resolve_name

        outer = self

        class _Reads(TorchFunctionMode):
            def __torch_function__(self, func, types, args=(), kwargs=None):  # noqa: ANN001
                name = resolve_name(func)
                if name in PYTHON_READS or (name in HOST_WRAPS and host_memory(*args)):
                    outer.count += 1
                return func(*args, **(kwargs or {}))

        self._mode = _Reads()
        self._mode.__enter__()
        self._exits = contextlib.ExitStack()
        self._exits.enter_context(python_exits(self._exit_seen))
        return self

    def _exit_seen(self, _name: str) -> None:
        self.count += 1

    def __exit__(self, *exc: object) -> None:
        self._exits.close()
        self._mode.__exit__(*exc)


def read_trace(prof: Any, steps: int, *, gpu: bool, source: str = "", top: int = 8) -> StepTrace:
    """A StepTrace from a finished torch.profiler.profile whose steps ran in STEP_RANGE ranges."""
    events = list(prof.events())
    spans = [
        (e.time_range.start, e.time_range.end)
        for e in events
        if e.name == STEP_RANGE and not _on_device(e)
    ]
    n = max(1, steps)
    sync_calls: dict[str, int] = {}
    readbacks = ops = kernels = sized = 0
    lines: list[str] = []
    for e in events:
        if _on_device(e):
            if not _is_copy(e.name):
                kernels += 1
            continue
        if not _inside(e.time_range.start, spans):
            continue
        parent = getattr(e, "cpu_parent", None)
        under_op = under_sized = False
        while parent is not None:
            under_op = under_op or parent.name.startswith("aten::")
            under_sized = under_sized or parent.name in SIZED_BY_DATA
            parent = getattr(parent, "cpu_parent", None)
        if e.name in SYNC_CALLS:
            sync_calls[e.name] = sync_calls.get(e.name, 0) + 1
        elif e.name in READBACKS and not under_sized:  # masked_select reads its size: one wait
            readbacks += 1
        elif e.name in SIZED_BY_DATA and not under_sized:
            sized += 1
        if e.name in READBACK_CALLERS and source:
            where = _source_line(e, source)
            if where and where not in lines:
                lines.append(where)
        if e.name.startswith("aten::") and not under_op and e.name not in NO_KERNEL:
            ops += 1
    cpu_us = sum(b - a for a, b in spans) / n
    rows = _rows(events, spans, n, gpu, top)
    return StepTrace(
        steps=steps,
        gpu=gpu,
        syncs=sum(sync_calls.values()) / n if gpu else None,
        readbacks=readbacks / n,
        kernels=kernels / n if gpu else None,
        ops=ops / n,
        step_cpu_us=cpu_us,
        sync_calls=sync_calls,
        sized=sized / n,
        rows=rows,
        lines=lines,
    )


def _rows(
    events: list[Any], spans: list[tuple[float, float]], n: int, gpu: bool, top: int
) -> list[OpRow]:
    """The operators and runtime calls inside the steps with the most self time per step (device
    time on a GPU, host time on a CPU), the readbacks and syncs always among them. Built from the
    events inside the step ranges, not key_averages(), which would add the profiler's own
    synchronize around the steps to the table."""
    by: dict[str, OpRow] = {}
    for e in events:
        name = e.name
        if _on_device(e) or name == STEP_RANGE or not _inside(e.time_range.start, spans):
            continue
        if _python_call(name):  # with a stack recorded: Python's own calls, not operators
            continue
        row = by.setdefault(name, OpRow(name, 0.0, 0.0, 0.0))
        row.calls += 1 / n
        row.cpu_us += float(e.self_cpu_time_total) / n
        row.device_us += _device_us(e) / n
    key = (lambda r: (r.device_us, r.cpu_us)) if gpu else (lambda r: (r.cpu_us, 0.0))
    ranked = sorted(by.values(), key=key, reverse=True)
    chosen = ranked[:top]
    flagged = [r for r in ranked if r.name in SYNC_CALLS or r.name in READBACK_CALLERS]
    for r in flagged:
        if r not in chosen:
            chosen.append(r)
    return chosen


def _us(value: float) -> str:
    if value >= 1000:
        return f"{value / 1000:.2f} ms"
    return f"{value:.0f} us" if value >= 10 else f"{value:.1f} us"


def table(trace: StepTrace, width: int = 80) -> list[str]:
    """The rows as a table that fits `width` columns: operator, calls, self CPU, self device
    (per step); a readback or sync row marked with '<'."""
    name_w = width - 38
    head = f"{'operator (per step)':<{name_w}} {'calls':>7} {'self CPU':>10} {'self GPU':>10}"
    out = [head[:width], "-" * min(width, len(head))]
    for r in trace.rows:
        name = r.name if len(r.name) <= name_w else r.name[: name_w - 3] + "..."
        flag = " <" if r.name in SYNC_CALLS or r.name in READBACK_CALLERS else ""
        gpu = _us(r.device_us) if trace.gpu else "-"
        calls = f"{r.calls:.0f}" if r.calls >= 10 else f"{r.calls:.3g}"
        out.append(f"{name:<{name_w}} {calls:>7} {_us(r.cpu_us):>10} {gpu:>10}{flag}"[:width])
    return out


def summary_line(trace: StepTrace) -> str:
    """'8 device syncs, 2,403 kernels, 8 readbacks per step, host 31 ms' (on a CPU: readbacks and
    operators); under 80 columns with a two-space indent."""
    if trace.gpu:
        return (
            f"{trace.syncs:.3g} device syncs, {trace.kernels:,.0f} kernels, "
            f"{trace.readbacks:.3g} readbacks per step, host {_us(trace.step_cpu_us)}"
        )
    if trace.sized:  # one more count: "per step" goes, to stay in 80 columns
        return (
            f"{trace.readbacks:.3g} readbacks, {trace.sized:.3g} data-sized ops (a sync each on a "
            f"GPU), {trace.ops:,.0f} ops, host {_us(trace.step_cpu_us)}"
        )
    return (
        f"{trace.readbacks:.3g} readbacks (a sync each on a GPU), {trace.ops:,.0f} ops per step, "
        f"host {_us(trace.step_cpu_us)}"
    )


def time_steps(
    steps: dict[str, Callable[[int], Any]],
    *,
    gpu: bool,
    rounds: int = 5,
    per_round: int = 3,
    clock: Callable[[], float] = time.perf_counter,
    after: Callable[[str], None] | None = None,
) -> dict[str, dict[str, float]]:
    """Seconds per step of each callable, in interleaved rounds (a, b, a, b, ...) so a load that
    comes and goes moves both: each round runs `per_round` steps and waits for the device
    before reading the clock. One warm-up round first. {name: {median_s, min_s, max_s}}.
    `after(name)` runs after each callable's turn, its clock read: a check's own bookkeeping
    (putting back what a learner's step rebound) outside every timed interval."""
    import torch

    def sync() -> None:
        if gpu:
            torch.cuda.synchronize()

    seen: dict[str, list[float]] = {k: [] for k in steps}
    done = dict.fromkeys(steps, 0)  # each callable sees step 0, 1, 2, ... of its own
    with small_work(gpu):
        _rounds(steps, seen, done, rounds, per_round, sync, clock, after)
    return {
        name: {"median_s": statistics.median(v), "min_s": min(v), "max_s": max(v)}
        for name, v in seen.items()
    }


def _rounds(
    steps: dict[str, Callable[[int], Any]],
    seen: dict[str, list[float]],
    done: dict[str, int],
    rounds: int,
    per_round: int,
    sync: Callable[[], None],
    clock: Callable[[], float],
    after: Callable[[str], None] | None = None,
) -> None:
    for r in range(rounds + 1):
        for name, fn in steps.items():
            sync()
            t0 = clock()
            for _ in range(per_round):
                fn(done[name])
                done[name] += 1
            sync()
            if r:  # round 0 warms up
                seen[name].append((clock() - t0) / per_round)
            if after is not None:
                after(name)
