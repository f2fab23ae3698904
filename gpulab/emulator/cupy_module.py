"""A `cupy` module on the CPU: NumPy arrays, and RawKernel (RawModule, ElementwiseKernel,
ReductionKernel) run by the CUDA emulator.

`make()` builds a fresh module; gpulab.emulator.session puts it in `sys.modules` for one check
(the tests, through gpulab.testing.fake_cupy). Arrays are NumPy arrays in the emulator's device
memory (gpulab.emulator.memory): each allocation sits between guard zones, so a kernel that
indexes past an array is stopped and named before it touches anything else. The module also
records the library's own work inside a learner's call (`__gpulab_trace__`), the stand-in for the
kernels a GPU's profiler sees (gpulab.exercises.kernel_trace).
"""

from __future__ import annotations

import contextlib
import functools
import types
from collections.abc import Generator, Iterator
from typing import Any

import numpy as np

from gpulab.emulator import cuda, memory
from gpulab.emulator.cuda import RawKernel, instantiate, with_defines
from gpulab.emulator.names import RECORD_ENDED

# What ran inside the traced blocks now open is kept in a generator's frame (_records), the
# emulator's stand-in for the kernels CUPTI records on a GPU (gpulab.exercises.kernel_trace).
# A frame is what the learner's code cannot reach (sandbox.refuse_walks refuses every road to
# one): a red team cleared the record, a module list then, after `cupy.abs` did zip-add's work,
# reaching it by a name built at run time (`getattr(sys.modules[cupy.empty.__module__], "_TR" +
# "ACE")`) past the source scan, and another opened a traced block of its own around the
# library's call (`cupy.__gpulab_trace__.call()`), which took the names from the grader's.
# Sending into the generator can only add names; ending it ends every open record, which the
# grader's close then names (RECORD_ENDED)
_ADD, _OPEN, _CLOSE = range(3)


def _records() -> Generator[Any, tuple[int, Any], None]:
    """The open records, each under a key only its opener holds; every name goes into each."""
    opened: dict[int, tuple[object, list[str]]] = {}
    reply: Any = None
    while True:
        message: tuple[int, Any] = yield reply
        op, arg = message
        reply = None
        if op == _ADD:
            for _, names in opened.values():
                names.append(arg)
        elif op == _OPEN:
            reply = object()
            opened[id(reply)] = (reply, [])
        elif op == _CLOSE:
            held = opened.get(id(arg))
            if held is not None and held[0] is arg:
                reply = opened.pop(id(arg))[1]


def _started() -> Any:
    gen = _records()
    next(gen)
    return gen


_SINK = [_started()]


def _send(op: int, arg: Any = None) -> Any:
    """`(op, arg)` into the record; a record ended (or busy, or no generator of _records) is
    started afresh, its open records lost, which their closes find (None)."""
    sink = _SINK[0]
    try:
        if type(sink) is not types.GeneratorType or sink.gi_code is not _records.__code__:
            raise TypeError("not the record")
        return sink.send((op, arg))
    except (StopIteration, ValueError, RuntimeError, TypeError, AttributeError):
        _SINK[0] = _started()
        return None


# NumPy functions that allocate, view or move data: what a learner's call may do on the device
_NOT_WORK = frozenset(
    [
        "empty",
        "empty_like",
        "zeros",
        "zeros_like",
        "ones",
        "ones_like",
        "full",
        "full_like",
        "copyto",
        "reshape",
        "ravel",
        "shape",
        "ndim",
        "size",
        "result_type",
        "can_cast",
        "broadcast_to",
        "ascontiguousarray",
        "asarray",
        "concatenate",
        "stack",
        "atleast_1d",
        "atleast_2d",
        "squeeze",
        "expand_dims",
        "transpose",
        "moveaxis",
    ]
)


# The names CUPTI gives a copy between host and device (torch.profiler's kineto events): on a
# GPU a learner's call that moves data to the host and back shows them in its kernel trace, where
# kernel_trace.foreign counts them against the call; the fake records the same names
HTOD = "Memcpy HtoD (Pageable -> Device)"
DTOH = "Memcpy DtoH (Device -> Pageable)"
# Open cupy.fuse bodies (a depth): what runs in one is the learner's fused kernel, not library work
_FUSING: list[str] = []
# NumPy functions a fused body may call on its arrays, as CuPy compiles them into the fused
# kernel: element-wise ones, and the reductions cupy.fuse folds in at the end
_FUSABLE = frozenset(["where", "clip", "sum", "prod", "amax", "amin", "max", "min"])
_FUSABLE_REDUCE = frozenset(["add", "multiply", "maximum", "minimum"])
# A device array met inside a fused body is one the body was not handed (its arguments arrive as
# proxies over NumPy arrays): one held in a closure or a global. A red team's zip-add let
# `np.abs(a - b, out=out)` on such arrays do the work inside a fused body, where nothing was
# recorded, beside a one-element decoy kernel
_CAPTURED = "a CuPy array it was not handed as an argument (one from a closure or a global)"


def _record(name: str) -> None:
    """`name` in every open trace (none open: nothing). A fused body's own steps never get
    here: its proxies hold NumPy arrays, not device ones (_Fused)."""
    _send(_ADD, name)


# Every launch, whoever makes it (a watched wrapper, or the kernel object behind it), is in the
# record by its kernel's name, as CUPTI records every kernel on a GPU: a launch the watch did
# not see is then a kernel no launch of the learner's accounts for
cuda.ON_LAUNCH = (*cuda.ON_LAUNCH, _record)


def _not_fusable(what: str) -> TypeError:
    """The refusal of a fused body's step that CuPy cannot compile into a fused kernel."""
    return TypeError(
        f"cupy.fuse cannot compile {what}: a fused function is made of element-wise operations "
        "(ufuncs, operators, where, clip, astype) and sum/prod/max/min"
    )


def _host(x: Any) -> bool:
    """Whether `x` is an array in host memory (a NumPy array that is not the fake's device one)."""
    return isinstance(x, np.ndarray) and not isinstance(x, DeviceArray)


def _to_host() -> None:
    """A copy from the device to the host, as a GPU's trace records it (refused in a fused body)."""
    if _FUSING:
        raise _not_fusable("a copy to the host")
    _record(DTOH)


class DeviceArray(np.ndarray):
    """The fake's device array: a NumPy array that tells an open trace which library operations
    ran on it (a ufunc, a reduction, a NumPy function), as a GPU's record names the kernels, and
    the copies between it and the host (CUPTI's memcpys)."""

    def __array_ufunc__(self, ufunc: Any, method: str, *inputs: Any, **kwargs: Any) -> Any:
        if _FUSING:
            raise _not_fusable(_CAPTURED)
        suffix = "" if method == "__call__" else f"_{method}"
        _record(f"cupy_{ufunc.__name__}{suffix}")
        args = [x.view(np.ndarray) if isinstance(x, DeviceArray) else x for x in inputs]
        if "out" in kwargs:
            kwargs["out"] = tuple(
                o.view(np.ndarray) if isinstance(o, DeviceArray) else o for o in kwargs["out"]
            )
        result = getattr(ufunc, method)(*args, **kwargs)
        if isinstance(result, np.ndarray) and not isinstance(result, DeviceArray):
            return result.view(DeviceArray)
        return result

    def __setitem__(self, key: Any, value: Any) -> None:
        if _host(value):  # a host array written into device memory: CuPy copies it over first
            if _FUSING:
                raise _not_fusable("a copy from the host")
            _record(HTOD)
        if isinstance(value, list | tuple):  # host values: copied over, then a copy kernel
            if _FUSING:
                raise _not_fusable("a copy from the host")
            _record(HTOD)
            _record("cupy_copy")
        elif isinstance(value, np.ndarray) and value.size > 1:
            _record("cupy_copy")  # on a GPU an array assigned is a copy kernel
        elif not isinstance(value, np.ndarray):
            # a scalar assigned is CuPy's fill (a red team's map-2d wrote each row's number with
            # `out[r] = r`, past the few fills a call may make, and a flat kernel added a)
            _record_fill(value)
        super().__setitem__(key, value)

    def __array_function__(self, func: Any, types: Any, args: Any, kwargs: Any) -> Any:
        name = func.__name__
        if _FUSING:
            raise _not_fusable(_CAPTURED)
        if name == "copyto":
            dst = args[0] if args else kwargs.get("dst")
            src = args[1] if len(args) > 1 else kwargs.get("src")
            if _host(dst) and isinstance(src, DeviceArray):
                _record(DTOH)
            elif isinstance(dst, DeviceArray) and _host(src):
                _record(HTOD)
            elif isinstance(src, DeviceArray) and src.size > 1:
                _record("cupy_copy")  # device to device: a copy kernel, as an assignment
        elif name not in _NOT_WORK:
            _record(f"cupy_{name}")
        return super().__array_function__(func, types, args, kwargs)

    def __getitem__(self, key: Any) -> Any:
        keys = key if isinstance(key, tuple) else (key,)
        if any(isinstance(k, list | np.ndarray) for k in keys):
            # an index array is a gather, CuPy's kernel on a GPU (and a host one copied over
            # first): a red team's broadcast-outer built col[r] and row[c] for every element with
            # col[flat // cols] and row[flat % cols], its kernel adding two flat arrays
            if any(_host(k) or isinstance(k, list) for k in keys):
                _record(HTOD)
            _record("cupy_take")
        got = super().__getitem__(key)
        if not isinstance(got, np.ndarray):
            _to_host()  # an element as a Python/NumPy number: CuPy's 0-d array read on the host
        return got

    def __iter__(self) -> Any:
        if self.ndim == 1:
            _to_host()  # iterating a vector hands out its elements on the host
        return super().__iter__()

    # A device array read on the host: a copy to the host, on a GPU as here
    def get(self, stream: Any = None, order: str = "C", out: Any = None) -> np.ndarray:
        """`cupy.ndarray.get()`: a NumPy copy (a copy to the host in the trace)."""
        _to_host()
        host = np.array(self.view(np.ndarray), order=order)  # type: ignore[call-overload]  # order is a str here, as CuPy takes it
        if out is not None:
            out[...] = host
            return out
        return host

    def set(self, arr: Any, stream: Any = None) -> None:
        """`cupy.ndarray.set(arr)`: the host array copied into this one (a copy from the host in
        the trace, as CUPTI records it on a GPU)."""
        if not isinstance(arr, np.ndarray) or isinstance(arr, DeviceArray):
            raise TypeError("Only numpy.ndarray can be set to cupy.ndarray")
        if arr.shape != self.shape or arr.dtype != self.dtype:
            raise ValueError("Shape or dtype mismatch")
        if _FUSING:
            raise _not_fusable("a copy from the host")
        _record(HTOD)
        self.view(np.ndarray)[...] = arr

    # NumPy's own methods that write an array in place, past __setitem__ and the ufuncs: on a
    # GPU each is a CuPy kernel (a fill with a scalar is allocation's kin; the trace caps them)
    def fill(self, value: Any) -> None:
        _record_fill(value)
        self.view(np.ndarray).fill(value)

    def put(self, *args: Any, **kwargs: Any) -> None:
        if any(_host(x) for x in (*args, *kwargs.values())):
            _record(HTOD)
        _record("cupy_put")
        self.view(np.ndarray).put(*args, **kwargs)

    def sort(self, *args: Any, **kwargs: Any) -> None:
        _record("cupy_sort")
        self.view(np.ndarray).sort(*args, **kwargs)

    def partition(self, *args: Any, **kwargs: Any) -> None:
        _record("cupy_partition")
        self.view(np.ndarray).partition(*args, **kwargs)

    # NumPy's methods that compute past the ufuncs and __array_function__ are set after the
    # class (_LIBRARY_METHODS); those that move data are recorded as copies here
    def setfield(self, *args: Any, **kwargs: Any) -> None:
        if any(_host(x) for x in (*args, *kwargs.values())):
            _record(HTOD)
        _record("cupy_copy")
        super().setfield(*args, **kwargs)

    # A copy or a cast is CuPy's copy kernel on a GPU, which the trace counts as the learner's
    # only right after their own launch: a red team's transpose-tiled let `a.T.copy()` transpose
    # (unrecorded here) and copied the result through a shared tile
    def copy(self, *args: Any, **kwargs: Any) -> Any:
        if self.size > 1:
            _record("cupy_copy")
        return super().copy(*args, **kwargs)

    def astype(self, *args: Any, **kwargs: Any) -> Any:
        if self.size > 1:
            _record("cupy_copy")
        return super().astype(*args, **kwargs)

    def __copy__(self) -> Any:
        if self.size > 1:
            _record("cupy_copy")
        return super().__copy__()

    def tobytes(self, order: Any = "C") -> bytes:
        _to_host()
        return super().tobytes(order)

    def __reduce__(self) -> Any:
        _to_host()  # pickling (dumps, dump, copy.deepcopy through it) reads the values on the host
        return super().__reduce__()

    def __reduce_ex__(self, protocol: Any) -> Any:
        _to_host()
        return super().__reduce_ex__(protocol)

    @property  # type: ignore[override]  # NumPy types flat as its own flatiter; the fake hands back its recording stand-in
    def flat(self) -> _Flat:
        return _Flat(self)

    @flat.setter
    def flat(self, value: Any) -> None:
        _Flat(self)[...] = value

    def item(self, *args: Any) -> Any:
        _to_host()
        return super().item(*args)

    def tolist(self) -> Any:
        _to_host()
        return super().tolist()

    def __float__(self) -> float:
        _to_host()
        return float(self.view(np.ndarray))

    def __int__(self) -> int:
        _to_host()
        return int(self.view(np.ndarray))

    def __complex__(self) -> complex:
        _to_host()
        return complex(self.view(np.ndarray))


# NumPy's methods that compute past the ufuncs and __array_function__ (a red team's
# dot-reduction passed with `a.dot(b)` handed to a kernel that only wrote it): each is one CuPy
# kernel on a GPU (cuBLAS's for dot), recorded as such before NumPy runs it
_LIBRARY_METHODS = (
    "dot", "argmax", "argmin", "argsort", "searchsorted", "nonzero",
    "take", "compress", "repeat", "choose", "byteswap", "resize",
)  # fmt: skip


def _library_method(name: str) -> Any:
    numpy_method = getattr(np.ndarray, name)

    def method(self: DeviceArray, *args: Any, **kwargs: Any) -> Any:
        _record(f"cupy_{name}")
        return numpy_method(self, *args, **kwargs)

    method.__name__ = method.__qualname__ = name
    return method


for _name in _LIBRARY_METHODS:
    setattr(DeviceArray, _name, _library_method(_name))


class _Flat:
    """`DeviceArray.flat`: reads as NumPy's flat iterator does, a write through it a copy kernel
    (from the host: a copy over first), as `cupy.flatiter`'s are on a GPU."""

    def __init__(self, a: DeviceArray) -> None:
        self._it = a.view(np.ndarray).flat

    def __getitem__(self, key: Any) -> Any:
        got = self._it[key]
        _to_host()
        return got

    def __setitem__(self, key: Any, value: Any) -> None:
        if _host(value) or isinstance(value, list | tuple):
            _record(HTOD)
        _record("cupy_copy")
        self._it[key] = value.view(np.ndarray) if isinstance(value, DeviceArray) else value

    def __len__(self) -> int:
        return len(self._it)

    def __iter__(self) -> Any:
        _to_host()
        return iter(self._it)


def _record_fill(value: Any) -> None:
    """A fill with a scalar, named as a GPU's trace names it: a memset for zero, else CuPy's
    copy from a Python number (kernel_trace counts them as allocation, a few a call)."""
    zero = bool(np.all(np.asarray(value) == 0))
    _record("memset" if zero else "cupy_copy__float_float32")


class _Trace:
    """The kernel_trace.KernelTrace interface over the fake's record."""

    @contextlib.contextmanager
    def call(self) -> Iterator[list[str]]:
        """The names recorded in the block, appended when it ends (as KernelTrace's)."""
        names: list[str] = []
        key = _send(_OPEN)
        sink = _SINK[0]  # the record the block opened in: one put in its place keeps nothing
        try:
            yield names
        finally:
            got = _send(_CLOSE, key) if _SINK[0] is sink else None
            names.extend(got if isinstance(got, list) else [RECORD_ENDED])


def _device(shape: Any, dtype: Any) -> np.ndarray:
    """An uninitialised device array of `shape` in the emulator's guarded memory."""
    dt = np.dtype(dtype)
    shape = (shape,) if isinstance(shape, int | np.integer) else tuple(shape)
    n = int(np.prod(shape, dtype=np.int64))
    return memory.allocate(n * dt.itemsize).view(dt).view(DeviceArray).reshape(shape)


def empty(shape: Any, dtype: Any = np.float64) -> np.ndarray:
    """An uninitialised array (NaN or 0x5A bytes, as fresh device memory holds garbage)."""
    out = _device(shape, dtype)
    # garbage, as cudaMalloc gives (no fill in the trace: a GPU runs none)
    out.view(np.ndarray).fill(np.nan if np.dtype(dtype).kind == "f" else 0x5A)
    return out


def full(shape: Any, fill_value: Any, dtype: Any = None) -> np.ndarray:
    """An array of `shape` filled with `fill_value`."""
    out = _device(shape, np.asarray(fill_value).dtype if dtype is None else dtype)
    out.fill(fill_value)
    return out


def zeros(shape: Any, dtype: Any = np.float64) -> np.ndarray:
    """An array of zeros."""
    return full(shape, 0, dtype)


def ones(shape: Any, dtype: Any = np.float64) -> np.ndarray:
    """An array of ones."""
    return full(shape, 1, dtype)


def empty_like(a: np.ndarray, dtype: Any = None) -> np.ndarray:
    """An uninitialised array with `a`'s shape (and dtype unless given)."""
    return empty(a.shape, a.dtype if dtype is None else dtype)


def zeros_like(a: np.ndarray, dtype: Any = None) -> np.ndarray:
    """Zeros with `a`'s shape (and dtype unless given)."""
    return zeros(a.shape, a.dtype if dtype is None else dtype)


def full_like(a: np.ndarray, fill_value: Any, dtype: Any = None) -> np.ndarray:
    """`fill_value` with `a`'s shape (and dtype unless given)."""
    return full(a.shape, fill_value, a.dtype if dtype is None else dtype)


def asarray(a: Any, dtype: Any = None) -> np.ndarray:
    """A device copy of `a`, as `cupy.asarray` copies host data to the device (a copy to the
    device in the trace); a device array of that dtype is itself, as in CuPy."""
    if isinstance(a, DeviceArray):
        if dtype is None or np.dtype(dtype) == a.dtype:
            return a
        out = _device(a.shape, dtype)
        out[...] = a  # a cast on the device: a copy kernel
        return out
    if _FUSING:
        raise _not_fusable("a copy from the host")
    src = np.asarray(a, dtype=dtype)
    out = _device(src.shape, src.dtype)
    _record(HTOD)
    np.ndarray.__setitem__(out, Ellipsis, src)  # the copy itself, no kernel
    return out


def ascontiguousarray(a: Any, dtype: Any = None) -> np.ndarray:
    """A contiguous device copy of `a` (a contiguous device array of that dtype is itself)."""
    if isinstance(a, DeviceArray) and not a.flags.c_contiguous:
        out = _device(a.shape, a.dtype if dtype is None else dtype)
        out[...] = a
        return out
    return asarray(a, dtype)


def asnumpy(a: Any) -> np.ndarray:
    """`a` as a plain NumPy array, as a device-to-host copy gives (one in the trace)."""
    if _FUSING:
        raise _not_fusable("a copy to the host")
    if isinstance(a, DeviceArray):
        _to_host()
        return np.array(a.view(np.ndarray))
    return np.array(a)


class _Device:
    @property
    def attributes(self) -> dict[str, int]:
        """A new dict at every read. CuPy keeps one per device and hands it out again, so a
        write into it lasts; the grader asks `runtime.deviceGetAttribute` instead, and a fresh
        dict here keeps a write from slowing later checks in the same worker."""
        return {"MultiProcessorCount": 2}  # small, so a fixed grid is outgrown by the tests

    def __init__(self, index: int = 0) -> None:
        self.id = index

    def synchronize(self) -> None:
        return None

    def __enter__(self) -> _Device:
        return self

    def __exit__(self, *exc: object) -> None:
        return None


def _device_attribute(attribute: int, device: int) -> int:
    """`cupy.cuda.runtime.deviceGetAttribute`, for the one attribute the checks ask."""
    if attribute != 16:  # cudaDevAttrMultiProcessorCount
        raise ValueError(f"the CUDA emulator has no device attribute {attribute}")
    return _Device(device).attributes["MultiProcessorCount"]


class _Stream:
    """`cupy.cuda.Stream`: the emulator runs every launch to its end, so a stream is always
    done (work left on a side stream is a GPU-only mistake; the GPU tests catch it)."""

    def __init__(self, null: bool = False, non_blocking: bool = False, ptds: bool = False) -> None:
        self.null, self.non_blocking, self.ptds = null, non_blocking, ptds
        self.ptr = 0
        self.done = True

    def synchronize(self) -> None:
        return None

    def record(self, event: _Event | None = None) -> _Event:
        return event if event is not None else _Event()

    def wait_event(self, event: _Event) -> None:
        return None

    def use(self) -> _Stream:
        return self

    def __enter__(self) -> _Stream:
        return self

    def __exit__(self, *exc: object) -> None:
        return None


class _Event:
    """`cupy.cuda.Event`: every launch has ended by the time it returns, so every event is done."""

    def __init__(
        self, block: bool = False, disable_timing: bool = False, interprocess: bool = False
    ) -> None:
        self.done = True

    def record(self, stream: _Stream | None = None) -> None:
        return None

    def synchronize(self) -> None:
        return None


_NULL_STREAM = _Stream(null=True)


def get_current_stream() -> _Stream:
    """The null stream (the emulator runs everything in order on it)."""
    return _NULL_STREAM


class RawModule:
    """`cupy.RawModule(code=...)`: `get_function(name)` is the emulator's RawKernel of that name."""

    def __init__(
        self,
        code: str | None = None,
        *,
        options: tuple[str, ...] = (),
        name_expressions: Any = None,
        **_: Any,
    ):
        if code is None:
            raise NotImplementedError("the fake RawModule takes CUDA C source (code=...)")
        self.code = code
        self.options = tuple(options)
        self.name_expressions = tuple(name_expressions or ())

    def get_function(self, name: str) -> RawKernel:
        """The kernel `name` of this module's source; a template's instance (`saxpy<float>`)
        where `name_expressions` named it, as CuPy asks."""
        if "<" in name and name in self.name_expressions:
            code = with_defines(self.code, self.options)
            made = instantiate(code, name)
            if made is not None:
                kernel = RawKernel(made[0], made[1])
                kernel.name = name  # as CuPy's get_function names it, and the GPU's trace
                return kernel
        return RawKernel(self.code, name, options=self.options)


class _Fused(np.lib.mixins.NDArrayOperatorsMixin):
    """An array as a cupy.fuse body sees it (CuPy hands the body proxies, not arrays): element-wise
    operations (ufuncs, operators, astype, where, clip) and sum/prod/max/min on it are the fused
    kernel's, run by NumPy; anything else CuPy could not compile is refused, and it is no NumPy
    array (`np.asarray` of it holds an object, not the data)."""

    __array_priority__ = 100

    def __init__(self, a: np.ndarray) -> None:
        # mangled: a fused body reaches the array only through what CuPy allows. A plain NumPy
        # view: the body's steps are the fused kernel's, so the device array's recording
        # methods never run for them, and any that does run met an array from outside the body
        self.__held = a.view(np.ndarray) if isinstance(a, DeviceArray) else a
        self.__given = a  # what the body returns, where it returns an argument as it came

    shape = property(lambda self: self._Fused__held.shape)
    dtype = property(lambda self: self._Fused__held.dtype)
    ndim = property(lambda self: self._Fused__held.ndim)
    size = property(lambda self: self._Fused__held.size)

    def astype(self, dtype: Any, *args: Any, **kwargs: Any) -> _Fused:
        return _Fused(self._Fused__held.astype(dtype))

    def __array_ufunc__(self, ufunc: Any, method: str, *inputs: Any, **kwargs: Any) -> Any:
        if "out" in kwargs:
            kwargs["out"] = tuple(_unfused(o) for o in kwargs["out"])
        return _fused(getattr(ufunc, method)(*(_unfused(x) for x in inputs), **kwargs))

    def __array_function__(self, func: Any, types: Any, args: Any, kwargs: Any) -> Any:
        if func.__name__ not in _FUSABLE:
            raise _not_fusable(f"numpy.{func.__name__}")
        return _fused(func(*(_unfused(x) for x in args), **kwargs))

    def __getitem__(self, key: Any) -> Any:
        raise _not_fusable("indexing")

    def __setitem__(self, key: Any, value: Any) -> None:
        raise _not_fusable("indexing")

    def __getattr__(self, attr: str) -> Any:
        if attr.startswith("__"):
            raise AttributeError(attr)  # no __array__ nor buffer: NumPy cannot read it as data
        if attr in ("sum", "prod", "max", "min"):
            return lambda *a, **k: _fused(getattr(self._Fused__held, attr)(*a, **k))
        raise _not_fusable(f"ndarray.{attr}")

    def __iter__(self) -> Any:
        raise _not_fusable("a loop over an array")

    def __len__(self) -> int:
        raise _not_fusable("len()")

    def __bool__(self) -> bool:
        raise _not_fusable("an array's truth value")

    def __float__(self) -> float:
        raise _not_fusable("a copy to the host")

    __int__ = __index__ = __complex__ = __float__


def _unfused(x: Any) -> Any:
    return x._Fused__held if isinstance(x, _Fused) else x


def _fused(x: Any) -> Any:
    if isinstance(x, tuple):
        return tuple(_fused(v) for v in x)
    return _Fused(x) if isinstance(x, np.ndarray) else x


def _one_kernel(f: Any, kernel_name: str | None = None) -> Any:
    """`f` run by NumPy as one fused kernel: on a GPU CuPy compiles it into a single kernel of
    the learner's, so its element-wise steps are no library work for an open trace. The body
    gets proxies (_Fused) of its array arguments, as CuPy's; what CuPy cannot compile into a
    fused kernel (np.bincount, np.cumsum, a copy to the host, indexing) raises TypeError."""

    def fused(*args: Any, **kwargs: Any) -> Any:
        name = str(kernel_name or getattr(f, "__name__", None) or "fuse")
        if not name.isidentifier():
            # CuPy 14 names the fused kernel after the function: on an H200, NVRTC refused
            # "<lambda>" ("expected an identifier"), so a lambda passed here and failed there
            raise TypeError(
                f"cupy.fuse names its kernel after the function, and {name!r} is no C name: "
                "the compile fails; define the function with def"
            )
        _FUSING.append(name)
        try:
            out = f(*(_fused(a) for a in args), **{k: _fused(v) for k, v in kwargs.items()})
        finally:
            _FUSING.pop()
        if isinstance(out, tuple):
            return tuple(_device_result(v) for v in out)
        return _device_result(out)

    fused.__name__ = getattr(f, "__name__", "fuse")
    return fused


def _device_result(x: Any) -> Any:
    """What a fused kernel returns: its array as a device array (a NumPy value as CuPy's 0-d)."""
    x = x._Fused__given if isinstance(x, _Fused) else x
    if isinstance(x, np.generic):  # a reduction's result: CuPy's is a 0-d device array
        x = np.asarray(x)
    if isinstance(x, np.ndarray) and not isinstance(x, DeviceArray):
        if x.dtype == object:
            raise _not_fusable("a conversion to a NumPy array")
        return x.view(DeviceArray)
    return x


def fuse(*args: Any, **kwargs: Any) -> Any:
    """`cupy.fuse`: the function itself, run by NumPy on proxies of its arrays (no kernel to
    emulate: NumPy is exact; what CuPy could not fuse is refused)."""
    if args and callable(args[0]) and not kwargs:
        return _one_kernel(args[0])
    return functools.partial(_one_kernel, kernel_name=kwargs.get("kernel_name"))


def make() -> types.ModuleType:
    """A fresh fake `cupy` module: NumPy's namespace with the functions above on top."""
    mod = types.ModuleType("cupy")
    mod.__dict__.update({k: getattr(np, k) for k in dir(np) if not k.startswith("_")})
    for name in (
        "empty",
        "full",
        "zeros",
        "ones",
        "empty_like",
        "zeros_like",
        "full_like",
        "asarray",
        "ascontiguousarray",
        "asnumpy",
    ):
        setattr(mod, name, globals()[name])
    vars(mod).update(
        array=asarray,
        RawKernel=RawKernel,
        RawModule=RawModule,
        fuse=fuse,
        ElementwiseKernel=ElementwiseKernel,
        ReductionKernel=ReductionKernel,
        ndarray=np.ndarray,
        cuda=types.SimpleNamespace(
            Device=_Device,
            Stream=_Stream,
            Event=_Event,
            get_current_stream=get_current_stream,
            # CuPy exports the class under its module's name too: a learner may spell it so
            stream=types.SimpleNamespace(Stream=_Stream),
            runtime=types.SimpleNamespace(
                getDevice=lambda: 0,
                deviceGetAttribute=_device_attribute,
            ),
        ),
        __gpulab_fake__=True,
        __gpulab_trace__=_Trace(),
        __gpulab_plain__=(DeviceArray,),
    )
    return mod


def cupyx_modules() -> dict[str, types.ModuleType]:
    """`cupyx`, `cupyx.scipy` and its `ndimage` and `special` as SciPy's (checks use them for
    library paths); empty without SciPy."""
    try:
        import scipy.ndimage
        import scipy.special
    except ImportError:
        return {}
    x, xs = types.ModuleType("cupyx"), types.ModuleType("cupyx.scipy")
    vars(x).update(scipy=xs)
    vars(xs).update(ndimage=scipy.ndimage, special=scipy.special)
    return {
        "cupyx": x,
        "cupyx.scipy": xs,
        "cupyx.scipy.ndimage": scipy.ndimage,
        "cupyx.scipy.special": scipy.special,
    }


_CTYPES = {"float32": "float", "float64": "double", "int32": "int", "int64": "long long"}


def _params(spec: str) -> list[tuple[str, str]]:
    """'float32 x, T y' -> [('float32', 'x'), ('T', 'y')]."""
    pairs = [p.split() for p in (q.strip() for q in spec.split(",")) if p]
    return [(kind, name) for kind, name in pairs]


def _raw_params(spec: str) -> tuple[list[tuple[str, str]], set[str]]:
    """_params, with the names marked `raw` ('raw float32 x') set apart."""
    raw = {q.split()[-1] for q in spec.split(",") if q.split()[:1] == ["raw"]}
    return _params(spec.replace("raw ", " ")), raw


def _bind(params: list[tuple[str, str]], args: list[Any]) -> dict[str, str]:
    """C type of each parameter; a one-letter type (T) takes the dtype of its first argument."""
    types: dict[str, str] = {}
    out = {}
    for (t, name), arg in zip(params, args, strict=False):
        if t not in _CTYPES and arg is not None:
            types.setdefault(t, np.asarray(arg).dtype.name)
        out[name] = _CTYPES[types.get(t, t)]
    return out


# The fake ElementwiseKernel's launch: blocks of 128 threads (CuPy's), at most 64 of them
_EK_BLOCK, _EK_GRID = 128, 64


class ElementwiseKernel:
    """`cupy.ElementwiseKernel` for arrays of one shape and scalars, run by the emulator: the
    operation is pasted into a loop over `i`, as CuPy does, so its C is really compiled. A
    `raw` parameter is handed over as a pointer the operation indexes itself (the loop's size
    comes from the other arrays, as in CuPy), and `preamble=` is pasted above the kernel."""

    def __init__(
        self,
        in_params: str,
        out_params: str,
        operation: str,
        name: str = "kernel",  # CuPy's default, the name a GPU's trace records
        preamble: str = "",
        **_: Any,
    ):
        (self.ins, raw_in), (self.outs, raw_out) = _raw_params(in_params), _raw_params(out_params)
        self.raw = raw_in | raw_out
        self.op, self.name, self.preamble = operation, name, preamble

    def __call__(self, *args: Any) -> Any:
        ins, outs = list(args[: len(self.ins)]), list(args[len(self.ins) :])
        sized = [
            a
            for (_, n), a in zip(self.ins + self.outs, ins + outs, strict=False)
            if isinstance(a, np.ndarray) and n not in self.raw
        ]
        ctype = _bind(self.ins + self.outs, ins + outs + [None] * (len(self.outs) - len(outs)))
        while len(outs) < len(self.outs):
            outs.append(
                empty(
                    sized[0].shape,
                    {v: k for k, v in _CTYPES.items()}[ctype[self.outs[len(outs)][1]]],
                )
            )
        decl, bind, launch = [], [], []
        for (_, n), a in zip(self.ins, ins, strict=True):
            if isinstance(a, np.ndarray):
                decl.append(
                    f"const {ctype[n]}* {n}" if n in self.raw else f"const {ctype[n]}* {n}_"
                )
                if n not in self.raw:
                    bind.append(f"const {ctype[n]} {n} = {n}_[i];")
                launch.append(a)
            else:
                decl.append(f"{ctype[n]} {n}")
                launch.append(np.dtype({v: k for k, v in _CTYPES.items()}[ctype[n]]).type(a))
        for (_, n), a in zip(self.outs, outs, strict=True):
            decl.append(f"{ctype[n]}* {n}" if n in self.raw else f"{ctype[n]}* {n}_")
            if n not in self.raw:
                bind.append(f"{ctype[n]}& {n} = {n}_[i];")
            launch.append(a)
        typedefs = "".join(
            f"typedef {ctype[n]} {t}; "
            for t, n in dict((t, n) for t, n in self.ins + self.outs if t not in _CTYPES).items()
        )
        size = (sized or outs)[0].size
        # a grid-stride loop over a grid of blocks, as CuPy launches it on a GPU: each thread
        # does a few elements, so a thread that loops over the whole array inside one element's
        # operation (an ElementwiseKernel over a one-element dummy) is the busiest by far
        src = (
            f"{self.preamble}\n"
            f'extern "C" __global__ void {self.name}({", ".join(decl)}, long long n) {{\n'
            f"  {typedefs}\n"
            f"  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;\n"
            f"       i += (long long)blockDim.x * gridDim.x) {{ {' '.join(bind)} {self.op}; }}\n}}\n"
        )
        blocks = max(1, min(-(-size // _EK_BLOCK), _EK_GRID))
        kernel = RawKernel(src, self.name)
        kernel((blocks,), (_EK_BLOCK,), (*launch, np.int64(size)))
        self.ran = kernel.ran  # what it did, for the watch (own_work reads a launch's ran)
        return outs[0] if len(outs) == 1 else tuple(outs)


class ReductionKernel:
    """`cupy.ReductionKernel` of one input over all of it (axis=None) or over the last axis of a
    C-ordered array, run by the emulator in one thread: `a` starts at identity, each element's
    map_expr is `b`, `a = reduce_expr`, and post_map_expr sets the output from `a`."""

    def __init__(
        self,
        in_params: str,
        out_params: str,
        map_expr: str,
        reduce_expr: str,
        post_map_expr: str,
        identity: str,
        name: str = "reduce_kernel",  # CuPy's default, as above
        reduce_type: str | None = None,
        **_: Any,
    ) -> None:
        self.ins, self.outs = _params(in_params), _params(out_params)
        self.exprs = (map_expr, reduce_expr, post_map_expr, identity)
        self.name = name
        # pasted into the source as CuPy does: a C type ("double"); NumPy's name ("float64")
        # fails to compile here as under NVRTC, where a right/ file that passed here failed
        self.reduce_type = reduce_type

    def __call__(
        self, x: np.ndarray, out: Any = None, axis: Any = None, keepdims: bool = False
    ) -> np.ndarray:
        if axis not in (None, -1, x.ndim - 1):
            raise NotImplementedError("the fake reduces over everything or the last axis only")
        (xt, xn), (_, yn) = self.ins[0], self.outs[0]
        t = _bind(self.ins, [x])[xn]
        inner = x.size if axis is None else x.shape[-1]
        shape: tuple[int, ...] = () if axis is None else x.shape[:-1]
        if keepdims:
            shape = (1,) * x.ndim if axis is None else (*x.shape[:-1], 1)
        if out is None:
            out = empty(shape, x.dtype)
        elif tuple(out.shape) != shape:
            raise ValueError("Out shape is mismatched")  # CuPy's own words
        mapped, reduce, post, ident = self.exprs
        typedef = f"typedef {t} {xt};" if xt not in _CTYPES else ""
        acc = self.reduce_type or t
        src = (
            f'extern "C" __global__ void {self.name}(const {t}* {xn}_, {t}* {yn}_, long long m, '
            f"long long k) {{\n  {typedef}\n  for (long long r = 0; r < m; ++r) {{\n"
            f"    {acc} a = ({ident});\n"
            f"    for (long long i = 0; i < k; ++i) {{ const {t} {xn} = {xn}_[r * k + i]; "
            f"{acc} b = ({mapped}); a = ({reduce}); }}\n"
            f"    {t}& {yn} = {yn}_[r]; {post};\n  }}\n}}\n"
        )
        flat = out.reshape(-1)
        RawKernel(src, self.name)(
            (1,), (1,), (x, flat, np.int64(max(1, flat.size)), np.int64(inner))
        )
        return out
