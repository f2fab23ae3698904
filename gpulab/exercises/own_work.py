"""Whose work was it: the learner's own kernels, the streams they used, and early returns.

A kernel exercise is passed by a kernel the learner wrote, not by `cupy.add` or cuBLAS doing the
work behind a launch wrapper. So, for the whole of a check, `Watch` puts counting stand-ins in
place of CuPy's kernel factories (`RawKernel`, `RawModule`, `ElementwiseKernel`,
`ReductionKernel`, `fuse`): a kernel the learner's file creates (at import or inside its
function) is the library's own object behind a thin wrapper that counts its launches. Each call
into the learner's code then reports how many of their kernels it launched; a check that requires
the learner's own kernel fails when none ran, and names the library call that did the work when
the learner's source shows one.

Triton kernels are watched the same way when the check imported Triton before the learner's file
is loaded (the Triton exercises' checks do): `triton.jit` records the kernels the learner's file
defines, and every launch of a jitted function (`JITFunction.run`, or the interpreter's
`InterpretedFunction.run` on a machine without a GPU; an autotuner's trial launches too) inside a
call into the learner's code counts as one of theirs.

The same watch records the streams the learner's code creates (`cupy.cuda.Stream`,
`torch.cuda.Stream`). Two honesty rules follow from them:

- a timed call ends only when all the work it started has ended: before the timer's end event,
  the current stream waits on every stream of the learner's (`join`), so a kernel left running
  on a side stream is inside the measured interval, never a bare launch time;
- a function must return with its output ready for work queued after it on the current stream.
  Work left on a non-blocking stream breaks that (the next kernel may read the output before it
  is written), but only some of the time: a small kernel often finishes first. So before a
  correctness call, each non-blocking CuPy stream the learner already has is *gated*: a tiny
  kernel of ours that waits GATE_MS is queued on it, so the learner's work there cannot start
  at once. A function that orders the caller's stream after its work (a synchronize, an event the
  current stream waits on) still returns a right output, GATE_MS later; one that does not hands
  back an output the check reads before it was written, every time. A stream made inside the
  call cannot be gated: after the call the current stream catches up and such a stream still
  busy means the function returned before its kernel finished (`OwnWorkError`).

CuPy and torch are imported lazily: this module is imported where neither may be (the UI
process, the catalog).
"""

from __future__ import annotations

import ast
import contextlib
import functools
import operator
import os
import re
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gpulab.core import nvrtc
from gpulab.exercises import frames, kernel_trace, ptx_shares
from gpulab.exercises.refuse import module_frame
from gpulab.exercises.sandbox import (
    hooks,
    speed_changed,
    speed_settings,
    starts_watched,
    thread_name,
    unhook,
)

GATE_MS = 20.0  # how long a gate holds a learner's non-blocking stream (a check's call only)
_GATE = r"""
extern "C" __global__ void gpulab_gate(long long cycles) {
    long long start = clock64();
    while (clock64() - start < cycles) { __nanosleep(1000); }
}
"""
KERNEL_FACTORIES = ("RawKernel", "RawModule", "ElementwiseKernel", "ReductionKernel", "fuse")
# The kind of a launch of a jitted Triton function (Launch.kind), beside KERNEL_FACTORIES.
TRITON_KIND = "triton.jit"

# CuPy names a launch wrapper calls that do no work of the exercise's: allocation, dtypes,
# conversion and the runtime. Anything else the learner's source calls on `cupy` is a library
# routine, named in the message when none of the learner's kernels ran.
_PLUMBING = frozenset(
    {
        *KERNEL_FACTORIES,
        "asarray",
        "array",
        "ascontiguousarray",
        "asnumpy",
        "empty",
        "empty_like",
        "zeros",
        "zeros_like",
        "ones",
        "ones_like",
        "full",
        "full_like",
        "dtype",
        "int8",
        "int16",
        "int32",
        "int64",
        "uint8",
        "uint16",
        "uint32",
        "uint64",
        "float16",
        "float32",
        "float64",
        "intp",
        "get_array_module",
        "get_default_memory_pool",
        "get_default_pinned_memory_pool",
        "cuda",
        "ndarray",
        "iinfo",
        "finfo",
        "prod",
        "ceil",
    }
)


class OwnWorkError(Exception):
    """The learner's code did not do the work the exercise asks for; str() is one line."""


@dataclass
class Launch:
    """One launch of one of the learner's kernels."""

    kernel: str
    kind: str  # one of KERNEL_FACTORIES, or TRITON_KIND
    grid: Any = None
    block: Any = None
    shared_dynamic: int = 0
    wrapper: Any = None  # the _Kernel, to read its static shared memory when a check asks
    returned: bool = False  # the launch returned a new array (ElementwiseKernel, fuse)
    # device addresses of the array arguments (RawKernel, RawModule): which buffers it was given
    pointers: tuple[int, ...] = ()
    # the floating-point numbers it was handed by value (a kept answer passed in shows here)
    scalars: tuple[float, ...] = ()
    # what the launch did, counted as it ran, where the kernel runs on gpulab's emulator
    # (gpulab.emulator.cuda.Ran); None on a GPU, where the compiled code is read instead
    ran: Any = None
    # an argument in host memory (a NumPy array; pinned memory mapped into the GPU's address
    # space): what it is, or "" when every buffer is on the device
    host: str = ""
    # the integers from 64 KiB to 4 GiB it was handed by value: an address of this process's
    # own pages among them is not refused (a legitimate count can fall there), but named
    # should the GPU then fault (Watch.fault_named: the driver and /proc are asked only then)
    suspect: tuple[int, ...] = ()
    # a Triton autotuner's trial launch (Autotuner._bench), not a pass of the call's own
    trial: bool = False

    def shared_static(self) -> int | None:
        """Bytes of static shared memory the kernel declares (None: not knowable here)."""
        inner = getattr(self.wrapper, "inner", None)
        for name in ("shared_size_bytes",):
            value = getattr(inner, name, None)
            if isinstance(value, int):
                return value
        attrs = getattr(inner, "attributes", None)
        if isinstance(attrs, dict) and isinstance(attrs.get("shared_size_bytes"), int):
            return int(attrs["shared_size_bytes"])
        return None


@dataclass
class CallRecord:
    """What one call into the learner's code did."""

    launches: list[Launch] = field(default_factory=list)
    early: str = ""  # why the call returned before its work was done ("" when it did not)
    gated: bool = False  # a non-blocking stream of the learner's was gated (see the module doc)


class _Kernel:
    """A learner's kernel: the library's own object, whose launches the watch counts."""

    def __init__(self, inner: Any, kind: str, name: str, watch: Watch) -> None:
        self.inner = inner
        self._kind = kind
        self._name = name
        self._watch = watch
        self.source = str(getattr(inner, "code", "") or "")  # the CUDA C it was built from
        self.options = _options(inner)  # and the compiler options it was built with

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        launch = self._watch._launched(self, args, kwargs)
        try:
            out = self.inner(*args, **kwargs)
        except BaseException:  # re-raised: a launch the launcher refused is no launch
            # (too few arguments, a bad shape: it never ran; a red team's such decoy, named as
            # its ElementwiseKernel, stood in for it in the kernel trace)
            self._watch._unlaunched(launch)
            raise
        if launch is not None:
            launch.ran = getattr(self.inner, "ran", None)
            if hasattr(out, "shape"):
                launch.returned = True  # a new array: the copy into `out` that follows is theirs
        return out

    def __getattr__(self, attr: str) -> Any:
        return getattr(self.inner, attr)

    def __repr__(self) -> str:
        return f"<{self._kind} {self._name} (watched by gpulab)>"


class _Module:
    """A learner's RawModule: `get_function` hands out counted kernels."""

    def __init__(self, inner: Any, watch: Watch) -> None:
        self.inner = inner
        self._watch = watch

    def get_function(self, name: str) -> _Kernel:
        self._watch._compiled(name, "RawModule")
        kernel = _Kernel(self.inner.get_function(name), "RawModule", name, self._watch)
        kernel.source = str(getattr(self.inner, "code", "") or "")
        kernel.options = _options(self.inner)
        return kernel

    def __getattr__(self, attr: str) -> Any:
        return getattr(self.inner, attr)


def _float_scalar(a: Any) -> bool:
    """A floating-point number passed by value (a Python float, a NumPy float32/64 scalar)."""
    if isinstance(a, float):
        return True
    dtype = getattr(a, "dtype", None)
    return getattr(a, "ndim", None) == 0 and getattr(dtype, "kind", "") == "f"


def host_memory(args: Any) -> str:
    """What of a launch's arguments lives in host memory, or "": a NumPy array (the emulator's
    device arrays are its DeviceArray, in its own memory; real CuPy refuses NumPy arrays), or a
    CuPy array or a pointer-sized integer whose address the driver calls host memory (pinned
    memory mapped into the device's address space: a kernel reads and writes it without a copy
    the trace would record). An address the driver does not know is not counted."""
    np = sys.modules.get("numpy")
    cp = sys.modules.get("cupy")
    fake = cp is not None and getattr(cp, "__gpulab_trace__", None) is not None
    for a in args:
        if np is not None and isinstance(a, np.ndarray) and a.ndim > 0:
            if fake and type(a).__name__ != "DeviceArray":
                return "a NumPy array"
            continue
        if fake or cp is None:
            continue
        ptr = getattr(getattr(a, "data", None), "ptr", None)
        raw = ptr is None and _as_address(a) >= 1 << 32
        if raw:
            ptr = _as_address(a)  # a raw address passed as an integer
        kind = _driver_kind(cp, ptr) if isinstance(ptr, int) and ptr else None
        if kind == 1:  # cudaMemoryTypeHost
            return "host memory mapped into the device's address space (cudaHostAllocMapped)"
        if raw and isinstance(ptr, int) and kind in (0, None) and _in_host_mapping(ptr):
            # an address the driver never allocated, inside this process's own pages: an
            # H200 host's kernels read and wrote a NumPy buffer by its address (HMM), and
            # NumPy did zip-add's work between two copies
            return "host memory the GPU reaches by its address (pageable memory, through HMM)"
    return ""


def low_integers(args: Any) -> tuple[int, ...]:
    """The integers from 64 KiB to 4 GiB among a launch's arguments (not arrays), on a GPU:
    where a host address below 4 GiB would be. host_memory refuses an address from 4 GiB up
    only: on an H200 host the heap sat at 0x452f9ad0, where an element count a check passes
    could also fall, so below 4 GiB such a value is kept, and looked at only if the GPU
    faults (low_host_address)."""
    cp = sys.modules.get("cupy")
    if cp is None or getattr(cp, "__gpulab_trace__", None) is not None:
        return ()
    values = (
        _as_address(a) for a in args if getattr(getattr(a, "data", None), "ptr", None) is None
    )
    return tuple(v for v in values if 1 << 16 <= v < 1 << 32)


def low_host_address(values: tuple[int, ...]) -> str:
    """The first of `values` that the driver does not know and that lies in this process's
    own writable pages, described, or "" (see low_integers)."""
    cp = sys.modules.get("cupy")
    for ptr in values:
        kind = _driver_kind(cp, ptr) if cp is not None else None
        if kind in (0, None) and _in_host_mapping(ptr, writable=True):
            return f"an integer argument, {ptr:#x}, is an address in this process's host memory"
    return ""


def _as_address(a: Any) -> int:
    """An integer argument's value (a Python int, any NumPy integer scalar), or -1."""
    if isinstance(a, bool | float) or getattr(a, "ndim", 0) != 0:
        return -1
    try:
        return operator.index(a)
    except TypeError:
        return -1


def _driver_kind(cp: Any, ptr: int) -> int | None:
    """The driver's memory type of an address (0 unregistered, 1 host, 2 device, 3 managed),
    or None where it will not say."""
    try:
        attrs = cp.cuda.runtime.pointerGetAttributes(ptr)
    except Exception:  # noqa: BLE001 - not an address the driver knows
        return None
    return int(getattr(attrs, "type", 0))


def _in_host_mapping(ptr: int, maps: str = "/proc/self/maps", *, writable: bool = False) -> bool:
    """Whether `ptr` falls in one of this process's memory mappings (not the GPU driver's;
    with `writable`, one it may write: the heap, NumPy's buffers, not the program's code)."""
    try:
        with open(maps, encoding="ascii", errors="replace") as fh:
            for line in fh:
                span, _, rest = line.partition(" ")
                lo, _, hi = span.partition("-")
                if int(lo, 16) <= ptr < int(hi, 16):
                    if writable and not rest.startswith("rw"):
                        return False
                    return "/dev/nvidia" not in rest
    except (OSError, ValueError):
        return False
    return False


def launch_parts(kind: str, args: tuple, kwargs: dict[str, Any]) -> tuple[Any, Any, Any, Any]:
    """(grid, block, arguments, shared_mem) of a RawKernel launch however it was written:
    CuPy's `kernel(grid, block, args, shared_mem=...)` takes each by position or by name."""
    if kind not in ("RawKernel", "RawModule"):
        return None, None, None, 0
    names = ("grid", "block", "args", "shared_mem")
    got = [args[i] if len(args) > i else kwargs.get(n) for i, n in enumerate(names)]
    return got[0], got[1], got[2], got[3] if got[3] is not None else 0


def address(a: Any) -> int | None:
    """The device address of an array's first element (a CuPy array's `data.ptr`; the emulator's
    fake CuPy arrays are NumPy's), or None for what is no array."""
    ptr = getattr(getattr(a, "data", None), "ptr", None)
    if isinstance(ptr, int):
        return ptr
    np = sys.modules.get("numpy")
    if np is not None and isinstance(a, np.ndarray):
        return int(a.ctypes.data)
    return None


_LOWEST_ADDRESS = 1 << 16  # below any allocation's address on the device or the host


def _pointer(a: Any) -> int | None:
    """The address a launch argument hands the kernel: an array's, or an integer's value where
    it is large enough to be one (a Python or NumPy integer; sizes and counts are far below)."""
    np = sys.modules.get("numpy")
    if isinstance(a, bool) or (np is not None and isinstance(a, np.bool_)):
        return None
    if isinstance(a, int) or (np is not None and isinstance(a, np.integer)):
        return int(a) if int(a) >= _LOWEST_ADDRESS else None
    # a float holds an address exactly (below 2**53): a red team handed x as np.float64(ptr)
    if isinstance(a, float) or (np is not None and isinstance(a, np.floating)):
        f = float(a)
        return int(f) if f.is_integer() and _LOWEST_ADDRESS <= f < 2.0**53 else None
    return address(a)


def _kernel_name(kind: str, args: tuple, kwargs: dict[str, Any]) -> str:
    if "name" in kwargs:
        return str(kwargs["name"])
    if kind == "RawKernel" and len(args) > 1:
        return str(args[1])
    if kind == "ElementwiseKernel" and len(args) > 3:
        return str(args[3])
    if kind == "ReductionKernel" and len(args) > 6:
        return str(args[6])
    return kind


class Watch:
    """Counts the learner's kernel launches and records their streams, for one check.

    `install()` before the learner's file is loaded, `uninstall()` when the check is done (the
    grader does both in a finally). `call(fn)` wraps the learner's entry function: each call
    records a CallRecord, enforces `require_kernel` and, outside timing, early returns.
    """

    def __init__(
        self, *, require_kernel: bool | str | tuple[str, ...] = False, source: Path | None = None
    ) -> None:
        self.require_kernel = require_kernel
        self.source = source
        self.compiled: list[tuple[str, str]] = []  # (name, kind), in the order created
        self.launches: list[Launch] = []  # every launch inside a learner call, all calls
        self.streams: list[tuple[str, Any, bool]] = []  # (library, stream, non_blocking)
        self.timing = False  # set by the grader while timing: join streams, no early check
        # A context around each call that yields a list of refused library calls it saw (the
        # check's REFUSE, see gpulab.exercises.refuse); a call that made one fails.
        self.around: Callable[[], Any] | None = None
        # Queued ahead of every untimed call on a GPU: the spin the timed calls run behind
        # (gpulab.core.lead), so a call finds the device as busy whether it is timed or not
        self.lead: Callable[[], Any] | None = None
        # The kernels that ran inside each untimed call (gpulab.exercises.kernel_trace), where
        # the device can record them: a library kernel there is work the learner's is not doing
        self.trace: Any = None
        # Run as each untimed call returns, before the check looks at anything: the grader's
        # Guard puts back what the call rebound (a torch.equal patched inside the call must not
        # judge that call's inputs). Timed calls leave it to the timing's untimed `after`.
        self.after_call: Callable[[], Any] | None = None
        self.calls: list[CallRecord] = []
        self._patched: list[tuple[Any, str, Any]] = []
        self._active = False  # learner code is running: its import or a call
        self._aside = False  # the check's own code (the yardstick) is running: not theirs
        self._current: CallRecord | None = None
        self._gate_kernel: Any = None  # (the gate RawKernel, its cycles), made on first use
        self._gated: set[int] = set()  # ids of the streams a gate was ever queued on

    # -- install / uninstall -------------------------------------------------------------

    def install(self) -> None:
        """Patch CuPy's and torch's launch, stream and library entry points so the learner's
        calls are recorded."""
        cp = sys.modules.get("cupy")
        if cp is None and self.require_kernel:
            try:
                import cupy  # deferred: heavy, and absent on CPU-only machines
            except ImportError:
                cp = None
            else:
                cp = cupy
        if cp is not None:
            for kind in KERNEL_FACTORIES:
                real = getattr(cp, kind, None)
                if real is not None:
                    self._patch(cp, kind, self._factory(kind, real))
            self._patch_streams(getattr(cp, "cuda", None), "stream", self._cupy_stream_class)
        triton = sys.modules.get("triton")
        if triton is not None:
            self._install_triton(triton)
        torch = sys.modules.get("torch")
        tcuda = getattr(torch, "cuda", None) if torch is not None else None
        self._patch_streams(tcuda, "streams", self._torch_stream_class)
        if self.around is not None and torch is not None:
            self._guard_exits(torch)

    def _guard_exits(self, torch: Any) -> None:
        """Where a check rules what a call may do (ALLOW or REFUSE), DLPack's exports refuse to
        run inside a learner's call, whatever name reaches them: installed before the learner's
        file is imported, so a reference to them kept at import is ours too."""
        watch = self
        dlpack = getattr(getattr(torch, "utils", None), "dlpack", None)
        for owner, name in ((torch._C, "_to_dlpack"), (dlpack, "to_dlpack")):
            real = getattr(owner, name, None)
            if real is None:
                continue

            def guarded(*args: Any, _real: Any = real, _name: str = name, **kwargs: Any) -> Any:
                if watch._current is not None and not watch._aside:
                    raise OwnWorkError(
                        f"{_name} hands the tensor to another library through DLPack, past "
                        "the check's watch: in this exercise your own code does the work"
                    )
                return _real(*args, **kwargs)

            self._patch(owner, name, guarded)

    def _patch_streams(self, cuda: Any, submodule: str, wrap: Callable[..., type]) -> None:
        """Wrap `cuda.Stream` and `cuda.ExternalStream` (CuPy's or torch's) so each stream made
        is recorded, under both names the library exports each class by (`cupy.cuda.Stream`
        is `cupy.cuda.stream.Stream`, `torch.cuda.Stream` is `torch.cuda.streams.Stream`)."""
        module = getattr(cuda, submodule, None)
        for name in ("Stream", "ExternalStream"):
            real = getattr(cuda, name, None)
            if not isinstance(real, type):
                continue
            wrapped = wrap(real, name == "ExternalStream")
            self._patch(cuda, name, wrapped)
            if getattr(module, name, None) is real:
                self._patch(module, name, wrapped)

    def _install_triton(self, triton: Any) -> None:
        """Count launches of jitted Triton functions and record the learner's definitions."""
        watch = self
        real_jit = getattr(triton, "jit", None)
        if callable(real_jit):

            def jit(fn: Any = None, **kwargs: Any) -> Any:
                if fn is None:  # @triton.jit(...)
                    return lambda f: jit(f, **kwargs)
                if watch._active:
                    watch._compiled(getattr(fn, "__name__", "kernel"), TRITON_KIND)
                return real_jit(fn, **kwargs)

            jit.__doc__ = real_jit.__doc__
            self._patch(triton, "jit", jit)
        interpreting = os.environ.get("TRITON_INTERPRET", "") not in ("", "0")
        with suppress(ImportError, AttributeError):
            from triton.runtime.autotuner import Autotuner  # deferred: only with Triton imported

            if interpreting:
                # The interpreter has no device to time on, and an autotuner with several configs
                # fails asking for one. Each config still runs once (so each one is checked);
                # all tie, so the first is kept.
                def once(call: Callable[[], Any], quantiles: Any = None) -> list[float]:
                    call()
                    return [1.0, 1.0, 1.0]

                self._patch(Autotuner, "do_bench", property(lambda _self: once))
        trials: set[Any] = set()  # the code of the autotuner's benchmark and its kernel_call
        with suppress(ImportError, AttributeError):
            from triton.runtime.autotuner import Autotuner  # deferred: only with Triton imported

            bench = Autotuner._bench.__code__
            trials = {bench, *(c for c in bench.co_consts if isinstance(c, type(bench)))}
        classes = []
        with suppress(ImportError, AttributeError):
            from triton.runtime.jit import JITFunction  # deferred: only with Triton imported

            classes.append(JITFunction)
        with suppress(ImportError, AttributeError):
            from triton.runtime.interpreter import InterpretedFunction  # deferred: as above

            classes.append(InterpretedFunction)
        for cls in classes:
            real_run = cls.__dict__.get("run")
            if real_run is None:
                continue

            def run(self: Any, *args: Any, _real: Any = real_run, **kwargs: Any) -> Any:
                if not kwargs.get("warmup") and watch._current is not None:
                    name = getattr(getattr(self, "fn", None), "__name__", "kernel")
                    launch = Launch(name, TRITON_KIND, grid=kwargs.get("grid"))
                    launch.trial = _called_from_code(trials)
                    watch._current.launches.append(launch)
                    watch.launches.append(launch)
                return _real(self, *args, **kwargs)

            self._patch(cls, "run", run)

    def uninstall(self) -> None:
        """Undo every patch `install` made, newest first."""
        while self._patched:
            obj, name, old = self._patched.pop()
            with suppress(AttributeError, TypeError):  # read-only: it was never patched
                setattr(obj, name, old)

    def _patch(self, obj: Any, name: str, new: Any) -> None:
        old = getattr(obj, name)
        try:
            setattr(obj, name, new)
        except (AttributeError, TypeError):
            return
        self._patched.append((obj, name, old))

    @contextmanager
    def aside(self) -> Iterator[None]:
        """The check's own code runs (the yardstick timed beside the learner's calls): the
        streams it makes are not the learner's."""
        was, self._aside = self._aside, True
        try:
            yield
        finally:
            self._aside = was

    @contextmanager
    def loading(self) -> Iterator[None]:
        """The learner's module is being imported: kernels created now are theirs."""
        self._active = True
        try:
            yield
        finally:
            self._active = False

    # -- factories -----------------------------------------------------------------------

    def _factory(self, kind: str, real: Any) -> Callable[..., Any]:
        watch = self

        if kind == "fuse":

            def fuse(*args: Any, **kwargs: Any) -> Any:
                made = real(*args, **kwargs)
                if not watch._active or _made_by_a_library(sys._getframe(1), kind):
                    return made
                if args and callable(args[0]) and not kwargs:  # @cupy.fuse
                    name = getattr(args[0], "__name__", "fuse")
                    watch._compiled(name, kind)
                    return _Kernel(made, kind, name, watch)

                def decorate(f: Any) -> Any:  # @cupy.fuse(...)
                    name = str(kwargs.get("kernel_name") or getattr(f, "__name__", "fuse"))
                    watch._compiled(name, kind)
                    return _Kernel(made(f), kind, name, watch)

                return decorate

            return fuse

        def make(*args: Any, **kwargs: Any) -> Any:
            inner = real(*args, **kwargs)
            if not watch._active:  # the check's own kernels are not the learner's
                return inner
            if _made_by_a_library(sys._getframe(1), kind):
                return inner  # cupyx.scipy.ndimage builds its kernels inside the learner's call
            if kind == "RawModule":
                return _Module(inner, watch)
            name = _kernel_name(kind, args, kwargs)
            watch._compiled(name, kind)
            return _Kernel(inner, kind, name, watch)

        make.__name__ = kind
        make.__doc__ = getattr(real, "__doc__", None)
        return make

    def _cupy_stream_class(self, base: type, external: bool = False) -> type:
        watch = self

        class Stream(base):
            __doc__ = base.__doc__

            def __init__(self, *args: Any, **kwargs: Any) -> None:
                super().__init__(*args, **kwargs)
                if watch._aside:
                    return
                if external:  # a stream made elsewhere (a raw handle): its flags are unknown
                    watch.streams.append(("cupy", self, True))
                    return
                null = kwargs.get("null", args[0] if args else False)
                non_blocking = kwargs.get("non_blocking", args[1] if len(args) > 1 else False)
                if not null:
                    watch.streams.append(("cupy", self, bool(non_blocking)))

        Stream.__name__ = Stream.__qualname__ = base.__name__
        return Stream

    def _torch_stream_class(self, base: type, external: bool = False) -> type:
        watch = self

        class Stream(base):
            __doc__ = base.__doc__

            def __new__(cls, *args: Any, **kwargs: Any) -> Any:
                made = super().__new__(cls, *args, **kwargs)
                if watch._aside:
                    return made
                # A new stream from torch's pool (created non-blocking), or one made elsewhere
                # (ExternalStream); not the wrapper torch builds around an existing stream id
                # (current_stream() and friends).
                if external or ("stream_id" not in kwargs and "stream_ptr" not in kwargs):
                    watch.streams.append(("torch", made, True))
                return made

        Stream.__name__ = Stream.__qualname__ = base.__name__
        return Stream

    def _compiled(self, name: str, kind: str) -> None:
        if (name, kind) not in self.compiled:
            self.compiled.append((name, kind))

    def _unlaunched(self, launch: Launch | None) -> None:
        if launch is not None and self._current is not None:
            with contextlib.suppress(ValueError):
                self._current.launches.remove(launch)

    def _launched(self, kernel: _Kernel, args: tuple, kwargs: dict[str, Any]) -> Launch | None:
        if self._current is None:
            return None  # a launch outside any call into the learner's code (the check's own)
        grid, block, given, shared = launch_parts(kernel._kind, args, kwargs)
        launch = Launch(
            kernel._name,
            kernel._kind,
            grid=grid,
            block=block,
            shared_dynamic=int(shared) if isinstance(shared, int) else 0,
            wrapper=kernel,
        )
        if isinstance(given, tuple | list):
            # an address handed as an integer (a red team gave its search x.data.ptr as a
            # uint64 and cast it back in the kernel) is a pointer too: it lands in x's span
            launch.pointers = tuple(p for p in map(_pointer, given) if p is not None)
            launch.scalars = tuple(float(a) for a in given if _float_scalar(a))
            if not self.timing:  # a driver query a buffer: kept out of the timed calls
                launch.host = host_memory(given)
                launch.suspect = () if launch.host else low_integers(given)
        self._current.launches.append(launch)
        self.launches.append(launch)
        if launch.host:
            # refused before it runs: on an H200 host a kernel handed a NumPy buffer's address
            # faulted (an illegal access that ends the CUDA context) or, another time, read it
            # through HMM; either way the verdict is this one (kept in the record too, should
            # the learner's code catch the error)
            raise OwnWorkError(self.not_own(self._current))
        return launch

    # -- calls -----------------------------------------------------------------------------

    def call(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        """`fn` with every call recorded (see CallRecord) and the rules of the class doc."""
        watch = self

        def learner(*args: Any, **kwargs: Any) -> Any:
            record = CallRecord()
            # Gated before the learner's code is marked active: the gate is ours, not theirs
            record.gated = False if watch.timing else watch._gate()
            outer, watch._current = watch._current, record
            was_active, watch._active = watch._active, True
            before = _current_streams()
            hooks_in = hooks()
            speed_in = speed_settings()
            modes_in = _mode_depths()
            modes_left = 0
            hooked: list[str] = []
            slowed: list[str] = []
            refused: list[str] = []
            threads: list[Any] = []
            ran: list[str] = []
            traced = contextlib.ExitStack()
            try:
                # Refusals are on in every call, timed ones too: no call can tell it is timed by
                # asking whether a mode is active (the yardstick runs under the same mode)
                around = watch.around
                if not watch.timing and watch.lead is not None:
                    watch.lead()
                if not watch.timing and watch.trace is not None:
                    ran = traced.enter_context(watch.trace.call())
                with around() if around is not None else nullcontext(refused) as seen:
                    refused = seen
                    with starts_watched(threads):
                        out = fn(*args, **kwargs)
                if threads:
                    # work left to a thread goes on after the call returns: outside the timed
                    # window and the check of what the call wrote (a red team's vector-add
                    # finished its sum on a thread started on the first call)
                    refused.append(
                        f"your function started a thread ({thread_name(threads[0])}): work it "
                        "does after the call returns is outside what the check times and "
                        "checks; do the work in the call"
                    )
            except Exception:  # re-raised: the refusal replaces what the learner's code raised
                traced.close()
                if refused:  # the refusal, not what the learner's code made of it
                    raise OwnWorkError(refused[0]) from None
                raise
            finally:
                watch._active = was_active
                watch._current = outer
                _restore_streams(before)
                hooked = unhook(hooks_in)
                slowed = speed_changed(speed_in)
                modes_left = _pop_modes(modes_in)
                if watch.after_call is not None and not watch.timing:
                    watch.after_call()
            if modes_left:
                # a mode left on runs the learner's Python inside whatever torch runs next: a
                # red team's profile-step left one on after its first call that padded the
                # slow step's per-label losses with 400 operators each, so the bound on the
                # learner's operators (a share of what the slow step spends) let its loop pass
                refused.insert(
                    0,
                    f"your function left {modes_left} torch mode(s) on (a TorchFunctionMode or "
                    "TorchDispatchMode entered and not left): it runs your code inside what "
                    "runs after the call, the check's own work too; gpulab took it off",
                )
            if hooked:
                # checked in every call, timed ones too: a hook left on runs Python of yours
                # after the call returned, past the timer's clock and before the check reads
                refused.insert(
                    0,
                    f"your function left a hook on ({hooked[0]}): code it runs after the call "
                    "returns is outside what the check times and checks; gpulab took it off",
                )
            if slowed and watch.timing:
                # put back after every call; refused in a timed one, which the yardstick's
                # rounds follow (a check may let its untimed calls change them: honest-timing
                # sets one thread before each of its own figures)
                refused.insert(
                    0,
                    f"your function changed {slowed[0]} and left it so: what is timed beside "
                    "your calls (the yardstick) would run under it; put such a setting back "
                    "before you return (gpulab did)",
                )
            watch.calls.append(record)
            if refused:
                traced.close()
                raise OwnWorkError(refused[0])
            lazy = not_plain(out)
            if lazy:
                traced.close()
                raise OwnWorkError(lazy)
            if watch.timing:
                watch.join()
            else:
                record.early = watch._early_return()
            traced.close()  # after the early-return probe: the trace ends with a synchronize
            if record.early:
                raise OwnWorkError(record.early)
            if watch.require_kernel and not record.launches:
                raise OwnWorkError(watch.no_kernel_message())
            wrong = watch.not_own(record)
            if wrong:
                raise OwnWorkError(watch.with_source(wrong))
            foreign = kernel_trace.foreign_message(
                ran,
                [la.kernel for la in record.launches],
                copies=sum(la.returned for la in record.launches),
            )
            if foreign:
                raise OwnWorkError(watch.with_source(foreign))
            return out

        # The learner's name and module: a multi-process check finds the file to load in each
        # rank through fn.__module__ (gpulab.exercises.ranked)
        return functools.update_wrapper(learner, fn)

    def not_own(self, record: CallRecord) -> str:
        """Why a call's launches are not the learner's own kernels doing the work on the
        device, or "": a buffer in host memory (the work would leave the device without a copy
        the trace sees), or, where the exercise asks for a RawKernel (`OWN_KERNEL = "raw"`: the
        reduction is what it teaches), a kernel CuPy writes from a formula."""
        for launch in record.launches:
            if launch.host:
                return (
                    f"{launch.kernel} was handed memory outside the device ({launch.host}): "
                    "the data must stay in device memory, where your kernels do the work"
                )
            if self.require_kernel == "raw" and launch.kind not in ("RawKernel", "RawModule"):
                return (
                    f"your {launch.kind} lets CuPy write the reduction's kernel: this exercise asks for a "
                    "RawKernel (or RawModule) whose code does the reduction it teaches"
                )
            kinds = self.require_kernel if isinstance(self.require_kernel, tuple) else ()
            if kinds and launch.kind not in kinds:
                return (
                    f"your {launch.kind} lets CuPy write what this exercise teaches: write "
                    f"a {' or a '.join(kinds)}"
                )
        return ""

    def fault_named(self) -> str:
        """Why the GPU faulted, where a launch of the learner's was handed an address in host
        memory (a suspect: see low_host_address), or "": said in place of the bare fault."""
        for launch in reversed(self.launches):
            suspect = low_host_address(launch.suspect) if launch.suspect else ""
            if suspect:
                return (
                    f"{launch.kernel} was handed memory outside the device ({suspect}, "
                    "and the GPU faulted reaching it): the data must stay in device memory, "
                    "where your kernels do the work"
                )
        return ""

    def ours(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        """`fn` (the check's yardstick) wrapped at the same per-call cost as a learner's timed
        call (the current streams read and put back, the check's refusals on, the learner's
        streams joined) so the two are timed alike, with nothing recorded: it runs aside, its
        streams are not theirs."""
        watch = self

        def yardstick(*args: Any, **kwargs: Any) -> Any:
            before = _current_streams()
            # the hooks read and compared as around a learner's call (after the last launch,
            # inside the window): an H200's experts graded 0.44 to 0.72 of themselves while
            # only the learner's side paid it
            hooks_in = hooks()
            speed_in = speed_settings()  # read and compared as around a learner's call, too
            around = watch.around
            try:
                with watch.aside(), around() if around is not None else nullcontext([]) as seen:
                    out = fn(*args, **kwargs)
            finally:
                _restore_streams(before)
                unhook(hooks_in)
                speed_changed(speed_in)
            if seen:
                raise RuntimeError(f"our yardstick made a call this check refuses: {seen[0]}")
            if watch.timing:
                watch.join()
            return out

        return functools.update_wrapper(yardstick, fn)

    def join(self) -> None:
        """Make the current streams wait for every stream the learner created (no host wait)."""
        for lib, stream, _ in self.streams:
            if lib == "cupy":
                import cupy  # deferred: only when the learner made a CuPy stream

                ev = cupy.cuda.Event(disable_timing=True)
                ev.record(stream)
                cupy.cuda.get_current_stream().wait_event(ev)
            else:
                import torch  # deferred: only when the learner made a torch stream

                ev = torch.cuda.Event()
                ev.record(stream)
                torch.cuda.current_stream().wait_event(ev)

    def settle(self) -> None:
        """Wait for every stream of the learner's. Work a function left behind (held back by a
        gate, or just slow) must not land later in memory the pool has handed to the next
        case or the next check."""
        for _, stream, _ in self.streams:
            stream.synchronize()

    def _gate(self) -> bool:
        """Queue a gate on each non-blocking CuPy stream of the learner's (module doc)."""
        streams = [s for lib, s, nb in self.streams if lib == "cupy" and nb]
        if not streams or _real_cupy() is None:
            return False  # the emulator runs every launch to its end: nothing to gate
        import cupy  # deferred: a learner's CuPy stream means CuPy is imported already

        if self._gate_kernel is None:
            rate_khz = int(cupy.cuda.Device().attributes["ClockRate"])
            self._gate_kernel = (cupy.RawKernel(_GATE, "gpulab_gate"), rate_khz * GATE_MS)
        kernel, cycles = self._gate_kernel
        for stream in streams:
            kernel((1,), (1,), (cupy.int64(int(cycles)),), stream=stream)
            self._gated.add(id(stream))
        return True

    def _early_return(self) -> str:
        """Why the last call's output was not ready when it returned, or ""."""
        pending = [
            (lib, s)
            for lib, s, non_blocking in self.streams
            if non_blocking and id(s) not in self._gated  # a gated stream is busy by design
        ]
        if not pending:
            return ""
        # Let the current streams catch up first: a side stream they were told to wait on is
        # then done too; one that is still busy was never joined.
        _sync_current()
        for lib, stream in pending:
            busy = not bool(stream.done) if lib == "cupy" else not bool(stream.query())
            if busy:
                return (
                    "your function returned before its kernel finished: work left on another "
                    "stream? Synchronize that stream, or make the current stream wait for it "
                    "(an event), before you return"
                )
        return ""

    # -- what the check reads --------------------------------------------------------------

    def with_source(self, message: str) -> str:
        """`message` and the library calls in the learner's source that may have done it."""
        library = library_calls(self.source) if self.source is not None else []
        if not library:
            return message
        where = ", ".join(f"{name} (line {line})" for name, line in library[:3])
        return f"{message}: {where}?"

    def no_kernel_message(self) -> str:
        """Why no kernel of the learner's own ran: the library calls that did the work, if any."""
        library = library_calls(self.source) if self.source is not None else []
        if library:
            did = ", ".join(f"{name} (line {line})" for name, line in library[:3])
            why = f"{did} did the work"
        elif self.compiled:
            why = "the output came from somewhere else"
        else:
            why = (
                "your file compiles no kernel (RawKernel, RawModule, ElementwiseKernel, "
                "@triton.jit, ...)"
            )
        mine = ", ".join(name for name, _ in self.compiled[:4])
        compiled = f"; your file compiled {mine} but never launched it" if mine else ""
        return f"no kernel of yours ran: {why}{compiled}. This exercise is about writing it"

    def call_without_shared_memory(self) -> int | None:
        """The number (1-based) of the first call into the learner's code none of whose
        launches used shared memory the kernel's compiled code reads or writes; None when every
        call did, or when that cannot be known (no NVRTC to read the code with). A launch's
        `shared_mem=` that the kernel never touches, or a first call alone that uses it, is no
        use of shared memory, nor is a small launch that uses it beside the launches doing the
        work: the launches that use it must start at least half of the call's threads (a red
        team's one-block decoy that filled a tile and read a neighbour's slot, beside a kernel
        reading global memory, was graded silver on an H200)."""
        for k, call in enumerate(self.calls, start=1):
            if not call.launches:
                continue
            # a launch we cannot read (no NVRTC) is given the benefit of the doubt
            using = sum(
                _launch_threads(la) for la in call.launches if _uses_shared(la) is not False
            )
            if 2 * using < sum(_launch_threads(la) for la in call.launches):
                return k
        return None

    def call_sharing_nothing(self) -> int | None:
        """The number (1-based) of the largest call (the most threads launched) whose launches
        touched shared memory while no thread read a value another thread put there: each read
        back only its own slot, which saves no global access. On the emulator, counted as the
        launches ran (nor a shared atomic used); on a GPU, read from each launch's compiled code
        (`ptx_shares`: certain or given the benefit of the doubt). None when that call shared,
        or when it cannot be known. Only the largest: a 1-element input has no neighbour to
        share with."""
        best, most = None, 0
        for k, call in enumerate(self.calls, start=1):
            ran = [la.ran for la in call.launches if la.ran is not None]
            if not call.launches or 0 < len(ran) < len(call.launches):
                continue
            threads = sum(_launch_threads(la) for la in call.launches)
            if threads > most:
                best, most = (k, call.launches, ran), threads
        if best is None:
            return None
        k, launches, ran = best
        if ran:
            if not sum(r.shared_touches for r in ran):
                return None
            sharing = [la for la in launches if la.ran.shared_shares]
        else:
            touching = [la for la in launches if _uses_shared(la) is not False]
            if not touching:
                return None
            sharing = [la for la in touching if _shares(la) is not False]
        # as for using it: the launches that share must start half the call's threads, or a
        # one-block decoy that shares beside the kernel doing the work would answer for it
        return k if 2 * sum(_launch_threads(la) for la in sharing) < most else None

    def shared_memory_used(self) -> bool | None:
        """Whether any launch of the learner's used shared memory (None: not knowable)."""
        unknown = False
        for launch in self.launches:
            if launch.shared_dynamic > 0:
                return True
            static = launch.shared_static()
            if static is None:
                unknown = True
            elif static > 0:
                return True
        return None if unknown else False


def _real_cupy() -> Any:
    """CuPy where this process already imported it, and not the tests' fake (whose launches run
    to their end on the CPU: no stream to gate, save or wait for); else None."""
    cp = sys.modules.get("cupy")
    return None if cp is None or getattr(cp, "__gpulab_fake__", False) else cp


_LIBRARIES = ("cupy", "cupyx", "cupy_backends", "torch", "triton", "numpy", "scipy")


def _made_by_a_library(frame: Any, kind: str) -> bool:
    """Whether a kernel factory was called by a library's own code (cupyx.scipy.ndimage makes
    an ElementwiseKernel inside the call it serves), not by the learner's: the first caller
    outside gpulab's watch decides, and only on a line that names the factory. A library line
    that calls what it was handed is the learner's doing: a red team wrapped
    cp.ElementwiseKernel in torch.no_grad(), whose wrapper then made the kernel, unwatched."""
    for _ in range(8):
        if frame is None:
            return False
        module = str(frame.f_globals.get("__name__", ""))
        if not module.startswith("gpulab.exercises.own_work"):
            own = module.split(".")[0] in _LIBRARIES and module_frame(frame)
            return own and frames.classifier().names(frame, (kind,))
        frame = frame.f_back
    return False


_SHARED_ACCESS = re.compile(
    r"\b(ld|st|atom|red|ldmatrix|stmatrix)(\.[a-z0-9]+)*\.shared\b|\bcp\.async\b"
)


def _launch_threads(launch: Launch) -> int:
    return _threads(launch.grid) * _threads(launch.block)


def _threads(dims: Any) -> int:
    if isinstance(dims, tuple | list):
        out = 1
        for d in dims:
            out *= int(d)
        return out
    return int(dims or 1)


def _uses_shared(launch: Launch) -> bool | None:
    """Whether a launch used shared memory that its kernel's code touches: static shared
    memory the cubin declares, or dynamic shared memory the launch asked for, and in either
    case a shared load, store or atomic in the kernel's PTX (NVRTC). None where the code
    cannot be read (no NVRTC, a kernel without C source). On the emulator, from what the launch
    did: shared memory touched only in a branch no thread takes was not used."""
    asked = launch.shared_dynamic > 0 or bool(launch.shared_static())
    if not asked:
        return False
    if launch.ran is not None:  # the emulator counted what the launch did
        return launch.ran.shared_touches > 0
    read = _launch_ptx(launch)
    if read is None:
        return None
    ptx, body = read
    return bool(_SHARED_ACCESS.search(body if body is not None else ptx))


def _launch_ptx(launch: Launch) -> tuple[str, str | None] | None:
    """(the module's PTX, the launched kernel's entry in it or None) for a RawKernel or
    RawModule launch; None where the code cannot be read."""
    source = getattr(launch.wrapper, "source", "")
    if not source or launch.kind not in ("RawKernel", "RawModule"):
        return None
    ptx = _ptx_of(source, tuple(getattr(launch.wrapper, "options", ())))
    if ptx is None:
        return None
    return ptx, _ptx_entry(ptx, launch.kernel)


def _shares(launch: Launch) -> bool | None:
    """Whether a launch's kernel lets a thread read a shared value another thread wrote, read
    from its PTX (`ptx_shares`); None where the code cannot be read."""
    read = _launch_ptx(launch)
    return None if read is None else ptx_shares.shares(read[0], launch.kernel)


_SHUFFLE = re.compile(r"\b(?:shfl\.sync|redux\.sync)\b[^;]*;")
_STILL_KIND = re.compile(r"\bshfl\.sync\.(?:bfly|up|down)\.b32\s+(.*);")


def _still(shuffle: str, body: str) -> bool:
    """Whether a butterfly, up or down shuffle moves nothing: its lane offset is 0, written in
    the instruction or in the register it names, which the code sets to 0 and nothing else (a
    red team routed every value through __shfl_xor_sync(FULL, v, 0) to look warp-level)."""
    kind = _STILL_KIND.search(shuffle)
    operands = [o.strip() for o in kind.group(1).split(",")] if kind else []
    if len(operands) < 3:
        return False
    offset = operands[2]
    if not offset.startswith("%"):
        return offset in ("0", "0x00000000")
    defs = re.findall(rf"^\s*[a-z][\w.]*\s+{re.escape(offset)}\s*,\s*([^;]*);", body, re.M)
    return bool(defs) and all(d.strip() in ("0", "0x00000000") for d in defs)


def uses_shuffles(launch: Launch) -> bool | None:
    """Whether a launch's kernel moves values between lanes, read from its PTX (NVRTC): a
    `shfl.sync` or `redux.sync` instruction in the kernel or a device function it calls. A
    shuffle in a comment, in `#if 0` or in a function nobody calls compiles to nothing. None
    where the code cannot be read (no NVRTC, a kernel without C source). On the emulator, from
    what the launch did: a shuffle behind a branch no lane takes moved nothing."""
    if launch.ran is not None:
        return launch.ran.lane_moves > 0
    read = _launch_ptx(launch)
    if read is None:
        return None
    ptx, body = read
    if body is None or re.search(r"\bcall(\.uni)?\b", body):
        body = ptx  # a device function kept apart from the kernel: read them all
    return any(not _still(m.group(0), body) for m in _SHUFFLE.finditer(body))


_FLOAT_ADD = re.compile(
    r"\b(?:atom|red)(?:\.[a-z0-9]+)*\.add(?:\.[a-z0-9]+)*\.(?:f16|bf16|f32|f64)\b"
)


def float_atomic_adds(launch: Launch) -> bool | None:
    """Whether a launch's kernel adds floating-point values with atomics (`atom`/`red` `.add`
    on f16, bf16, f32 or f64), read from its PTX as `uses_shuffles` reads it: the order those
    land in is the order blocks finish, so the sum's last bits are the scheduler's. None where
    the code cannot be read. On the emulator, from what the launch did (no NVRTC needed: a
    laptop with torch's CPU wheel has none)."""
    if launch.ran is not None:
        return launch.ran.float_atomic_adds > 0
    read = _launch_ptx(launch)
    if read is None:
        return None
    ptx, body = read
    if body is None or re.search(r"\bcall(\.uni)?\b", body):
        body = ptx
    return bool(_FLOAT_ADD.search(body))


def _options(inner: Any) -> tuple[str, ...]:
    """The compiler options a CuPy RawKernel or RawModule was made with (`options=`): a `-D` the
    source's `#if` reads compiles another kernel without it."""
    options = getattr(inner, "options", ()) or ()
    return tuple(str(o) for o in options) if isinstance(options, tuple | list) else ()


def _ptx_of(source: str, options: tuple[str, ...] = ()) -> str | None:
    """The PTX of a kernel's source, compiled as CuPy compiled it (its options; an option
    NVRTC refuses leaves the code unread: None)."""
    try:
        compiled = nvrtc.compile_source(source, "sm_80", options)
    except nvrtc.NvrtcMissing:
        return None
    return compiled.ptx if compiled.ok and compiled.ptx else None


def _ptx_entry(ptx: str, name: str) -> str | None:
    """The body of the PTX entry whose (possibly mangled) name holds `name`."""
    for m in re.finditer(r"\.entry\s+([\w$]+)", ptx):
        if name in m.group(1):
            end = ptx.find("\n}", m.end())
            return ptx[m.end() : end if end >= 0 else len(ptx)]
    return None


def _called_from_code(codes: set[Any], depth: int = 12) -> bool:
    """Whether one of `codes` runs in the few frames above the caller's."""
    frame: Any = sys._getframe(2)
    for _ in range(depth):
        if frame is None:
            return False
        if frame.f_code in codes:
            return True
        frame = frame.f_back
    return False


def _mode_depths() -> tuple[int, int]:
    """How many torch function and dispatch modes are on now ((0, 0) without torch)."""
    torch = sys.modules.get("torch")
    if torch is None:
        return (0, 0)
    return (torch._C._len_torch_function_stack(), torch._C._len_torch_dispatch_stack())


def _pop_modes(depths: tuple[int, int]) -> int:
    """Take off the modes entered above `depths`; how many there were."""
    torch = sys.modules.get("torch")
    if torch is None:
        return 0
    popped = 0
    while torch._C._len_torch_function_stack() > depths[0]:
        torch._C._pop_torch_function_stack()
        popped += 1
    while torch._C._len_torch_dispatch_stack() > depths[1]:
        torch._C._pop_torch_dispatch_stack()
        popped += 1
    return popped


_ARRAY_HOOKS = (
    "__torch_function__",
    "__torch_dispatch__",
    "__array__",
    "__array_function__",
    "__cuda_array_interface__",
    "__dlpack__",
    "__float__",
    "__index__",
)


def _plain_types() -> tuple[type, ...]:
    plain: list[type] = [bool, int, float, complex, str, bytes]
    np = sys.modules.get("numpy")
    if np is not None:
        plain += [np.ndarray, np.generic]
    torch = sys.modules.get("torch")
    if torch is not None:
        plain += [torch.Tensor, torch.nn.Parameter]
    cp = sys.modules.get("cupy")
    if cp is not None and isinstance(getattr(cp, "ndarray", None), type):
        plain.append(cp.ndarray)
    plain += list(getattr(cp, "__gpulab_plain__", ()))  # the CPU tests' fake device array
    return tuple(plain)


def not_plain(value: Any, depth: int = 0) -> str:
    """Why `value`, returned by the learner's code, is not a plain result ('' when it is): a
    tensor or array subclass, or an object that acts as an array or a number, can compute when
    the check reads it, after the call and outside its timing. Plain: Python numbers, NumPy
    scalars, and exactly torch.Tensor (or Parameter), numpy.ndarray and cupy.ndarray, also
    inside lists, tuples and dicts; anything else that does not act as an array or number (a
    function, a module, None) is no result the check reads as one."""
    if depth > 4:
        return ""
    if isinstance(value, list | tuple):
        return next((w for v in value if (w := not_plain(v, depth + 1))), "")
    if isinstance(value, dict):
        return next((w for v in value.values() if (w := not_plain(v, depth + 1))), "")
    kind = type(value)
    plain = _plain_types()
    if kind in plain:
        return ""
    generic = getattr(sys.modules.get("numpy"), "generic", None)
    if generic is not None and isinstance(value, generic):
        return ""
    acts = [h for h in _ARRAY_HOOKS if getattr(kind, h, None) is not None]
    if acts or any(isinstance(value, p) for p in plain):
        return (
            f"your function returned a {kind.__name__}, which acts as an array or a number "
            f"({acts[0] if acts else 'a subclass'}): a result that computes when it is read "
            "does its work after the call, outside the check and the timing. Return a plain "
            "tensor, array or number"
        )
    return ""


def _current_streams() -> tuple[Any, Any]:
    """The current CuPy and torch streams, so a call that switched them can be put back."""
    cp_stream = torch_stream = None
    cp = _real_cupy()
    if cp is not None:
        try:
            cp_stream = cp.cuda.get_current_stream()
        except Exception:  # noqa: BLE001 - no device in this process: nothing to put back
            cp_stream = None
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_initialized():
        torch_stream = torch.cuda.current_stream()
    return cp_stream, torch_stream


def _restore_streams(before: tuple[Any, Any]) -> None:
    cp_stream, torch_stream = before
    if cp_stream is not None:
        import cupy  # deferred: it is already imported when a stream was recorded

        if cupy.cuda.get_current_stream().ptr != cp_stream.ptr:
            cp_stream.use()
    if torch_stream is not None:
        import torch  # deferred: already imported, see _current_streams

        if torch.cuda.current_stream() != torch_stream:
            torch.cuda.set_stream(torch_stream)


def _sync_current() -> None:
    cp = _real_cupy()
    if cp is not None:
        cp.cuda.get_current_stream().synchronize()
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_initialized():
        torch.cuda.current_stream().synchronize()


def library_calls(path: Path) -> list[tuple[str, int]]:
    """The CuPy (and cupyx) routines the learner's source calls, as ("cupy.add", line): the
    library doing the exercise's work, named when none of the learner's kernels ran."""
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"))
    except (OSError, SyntaxError, ValueError):
        return []
    aliases: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name.split(".")[0] in ("cupy", "cupyx"):
                    aliases[(a.asname or a.name).split(".")[0]] = (
                        a.name if a.asname else a.name.split(".")[0]
                    )
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] in (
            "cupy",
            "cupyx",
        ):
            for a in node.names:
                aliases[a.asname or a.name] = f"{node.module}.{a.name}"
    found: list[tuple[str, int]] = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        dotted = dotted_name(node.func)
        if not dotted:
            continue
        head, _, rest = dotted.partition(".")
        if head not in aliases:
            continue
        full = f"{aliases[head]}.{rest}" if rest else aliases[head]
        parts = full.split(".")
        if any(p in _PLUMBING for p in parts[1:]) or parts[-1].startswith("_"):
            continue
        if (full, node.lineno) not in found:
            found.append((full, node.lineno))
    return sorted(found, key=lambda item: item[1])


def dotted_name(node: ast.AST) -> str:
    """`a.b.c` for an attribute chain on a name; "" for any other expression."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return ""
