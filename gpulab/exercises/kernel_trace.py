"""Which kernels ran inside a learner's call, from the GPU's own record of them (CUPTI).

A kernel exercise asks for the learner's own kernel to do the work. CuPy offers no hook on its
launches (its ufuncs, reductions and operators launch from compiled code), so a call that runs
the learner's kernel on one part and `cupy.add` on the rest (a partial decoy) looked like the
learner's work to every rule that reads the source or counts the learner's launches. The GPU
knows better: CUPTI records every kernel that ran, by name, whoever launched it. So each
checked call of a kernel exercise (and one call at the timing's size after the timed rounds) runs
inside torch.profiler with CUDA activity only, and any kernel in it that is neither one of the
learner's own (by the names their kernels were compiled under) nor allocation, data movement or
the grader's own (a memset, a copy, a fill, gpulab's spin) fails the call, naming the kernel.

Where torch has no CUDA (CuPy without torch's CUDA build) or the profiler cannot start, there is
no trace and the check says nothing more than it did before; the CUDA emulator (a check without
CuPy, the CPU tests) has its own record (gpulab.emulator.cupy_module), read through the same
`KernelTrace` interface.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import functools
import re
from collections.abc import Callable, Iterator
from typing import Any

from gpulab.emulator.names import RECORD_ENDED

# What may run inside a call besides the learner's own kernels: allocation (a memset, CuPy's
# and torch's fills of a new buffer) and the grader's own kernels. A copy is not allocation: a
# transpose written as `out[...] = a.T` is a copy kernel, and the whole exercise. CuPy fills
# with a nonzero scalar (`cupy.full`, `a.fill(1.5)`) by a copy kernel from a Python scalar,
# named for the scalar's type (`cupy_copy__float_float64`; an array's copy names its dtype,
# `cupy_copy__float32_float32`): a constant written is allocation's kin, no work on the data.
_INFRA = re.compile(
    r"^(memset|gpulab_)|^cupy_fill|(FillFunctor|fill_kernel)"
    r"|^cupy_copy__(bool|int|float|complex)_",
    re.IGNORECASE,
)
# Names no kernel of the learner's may take, or the library's kernels would pass for theirs
_LIBRARY = re.compile(r"^(cupy_|cub|cutlass|gemm|sm\d+_|ampere_|volta_|void at::)", re.IGNORECASE)


def allowed(name: str, own: list[str]) -> bool:
    """Whether a kernel that ran inside a call is allocation or the grader's (the learner's own
    are counted by `foreign`, launch by launch)."""
    return bool(_INFRA.search(name.strip()))


# The name CuPy compiles a kernel made without one under, by the name the watch gives its
# launches (own_work._kernel_name: the factory's)
_UNNAMED = {"ElementwiseKernel": "kernel", "ReductionKernel": "reduce_kernel"}


def _is_own(name: str, own: str) -> bool:
    """Whether kernel `name` (as the GPU records it: a C name, or a demangled C++ signature)
    is the kernel compiled under the learner's name `own`."""
    if not own or _LIBRARY.match(own):
        return False
    own = _UNNAMED.get(own, own)
    if name == own or name == demangled(own):
        return True
    return re.search(rf"(^|[\s:*&]){re.escape(own)}(\(|<|$)", name) is not None


@functools.cache
def demangled(name: str) -> str:
    """`name` as the trace shows it: the profiler demangles every kernel's name, and a C name
    that reads as an Itanium type code comes back as that type (a kernel `extern "C" h` is
    recorded as "unsigned char", `i` as "int"). `name` itself where it demangles to nothing or
    the C++ runtime's demangler cannot be loaded."""
    try:
        lib = ctypes.CDLL(ctypes.util.find_library("stdc++") or "libstdc++.so.6")
        libc = ctypes.CDLL(None)
        fn = lib.__cxa_demangle
    except (OSError, AttributeError):
        return name
    fn.restype = ctypes.c_void_p
    fn.argtypes = [ctypes.c_char_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.POINTER(ctypes.c_int)]
    status = ctypes.c_int(0)
    out = fn(name.encode(), None, None, ctypes.byref(status))
    if not out:
        return name
    try:
        text = ctypes.string_at(out).decode(errors="replace")
    finally:
        libc.free(ctypes.c_void_p(out))
    return text if status.value == 0 else name


_COPY = re.compile(r"^cupy_copy|^memcpy", re.IGNORECASE)
# A fill with a nonzero scalar: allocation's kin a few times a call, but one a row writes a
# value that depends on the row (map-2d's `out[r].fill(r)` for every r, the learner's kernel
# then adding `a`): past FILLS a call, each is work the library did
_SCALAR_FILL = re.compile(
    r"^cupy_fill|(FillFunctor|fill_kernel)|^cupy_copy__(bool|int|float|complex)_", re.IGNORECASE
)
FILLS = 16


def foreign(names: list[str], launches: list[str], copies: int = 0) -> list[str]:
    """The kernels in `names` that neither allocation nor one of the learner's `launches` (the
    names of their launches in this call, one each) accounts for. `copies`: how many of those
    launches returned a new array, whose copy into the output (`out[...] = fused(x)`) is
    theirs too, one copy each."""
    left = list(launches)
    others = []
    fills = 0
    for name in names:
        if _SCALAR_FILL.search(name.strip()):
            fills += 1
            if fills > FILLS:
                others.append(name)
                continue
        if allowed(name, left):
            continue
        if copies and _COPY.search(name.strip()):
            copies -= 1
            continue
        mine = next((i for i, own in enumerate(left) if _is_own(name, own)), None)
        if mine is None:
            others.append(name)
        else:
            left.pop(mine)
    return others


class KernelTrace:
    """Records the kernels that run inside `with trace.call() as names:` (filled when the block
    ends). `make()` gives one where the device can record, else None."""

    def __init__(self, collect: Callable[[], Any]) -> None:
        self._collect = collect

    @classmethod
    def make(cls) -> KernelTrace | None:
        """A CUPTI trace through torch.profiler, or None (no CUDA build of torch, no GPU, or the
        profiler cannot start here)."""
        try:
            import torch
            from torch.profiler import ProfilerActivity, profile
        except ImportError:
            return None
        if not torch.cuda.is_available():
            return None

        @contextlib.contextmanager
        def collect() -> Iterator[list[str]]:
            names: list[str] = []
            with profile(activities=[ProfilerActivity.CUDA]) as prof:
                yield names
                # The current stream only: a learner's non-blocking stream held back by the
                # watch's gate must still be busy when the check reads the output. The
                # profiler's own end synchronizes the whole device (its `use_device`), which
                # let a side stream's early return pass on an H200: told not to, it ends here
                torch.cuda.current_stream().synchronize()
                inner = getattr(prof, "profiler", None)
                if inner is not None and hasattr(inner, "use_device"):
                    inner.use_device = None
            names.extend(kernels(prof))

        try:  # one empty session: CUPTI's first start costs a second, and may not be allowed
            with collect():
                pass
        except Exception:  # noqa: BLE001 - no trace is a check without this rule, not a failure
            return None
        return cls(collect)

    @contextlib.contextmanager
    def call(self) -> Iterator[list[str]]:
        """The names of the kernels that ran in the block, appended when it ends."""
        with self._collect() as names:
            yield names


def kernels(prof: Any) -> list[str]:
    """The names of the GPU kernels (and memsets and copies) a finished profile recorded."""
    out: list[str] = []
    results = getattr(getattr(prof, "profiler", None), "kineto_results", None)
    if results is not None:
        for e in results.events():
            if str(e.device_type()).endswith("CUDA"):
                out.append(str(e.name()))
        return out
    for e in prof.events():
        if str(getattr(e, "device_type", "")).endswith("CUDA"):
            out.append(str(e.name))
    return out


# What the CUDA emulator's record says of a call beside the kernels (gpulab.emulator)
_EMULATOR_SAYS = {
    RECORD_ENDED: (
        "your call ended the emulator's record of the kernels that ran in it: the check reads "
        "that record; leave the grader's objects alone"
    ),
}


def foreign_message(names: list[str], launches: list[str], copies: int = 0) -> str:
    """'' when every kernel in `names` is accounted for, else the one line that names the first
    that is not: the library did work inside the call (copies included: a copy kernel is a
    computed layout, not allocation)."""
    said = next((_EMULATOR_SAYS[n] for n in names if n in _EMULATOR_SAYS), None)
    if said:
        return said
    others = foreign(names, launches, copies)
    if not others:
        return ""
    fills = sum(1 for name in names if _SCALAR_FILL.search(name.strip()))
    if fills > FILLS:
        return (
            f"your call filled arrays with a scalar {fills} times: a fill allocates ({FILLS} a "
            "call at most); values written by a fill each (a row's number, a constant a block) "
            "are work the library did, and in this exercise your own kernel does the work"
        )
    shown = others[0] if len(others[0]) <= 80 else others[0][:77] + "..."
    more = f" (and {len(others) - 1} more)" if len(others) > 1 else ""
    return (
        f"a library kernel ran inside your call: {shown}{more}. In this exercise your own "
        "kernel does the work; the library may allocate, not compute or copy"
    )
