"""A `cupy` module for CPU tests: NumPy arrays, and RawKernel run by the CUDA emulator.

Install it with `install(monkeypatch)` (or `sys.modules["cupy"] = make()`) before importing code
that does `import cupy`. Arrays are NumPy arrays whose allocation is padded past the end, as CuPy's
memory pool rounds allocations up: a kernel without a bounds check then reads or writes a little
past the array without crashing the test process, and the check that owns the output buffer is the
one that notices.
"""

from __future__ import annotations

import types
from typing import Any

import numpy as np

from gpulab.testing.cuda_emu import RawKernel

PAD_BYTES = 64 << 10  # more than a block of 1024 threads can reach past the end with 16-byte loads


def _padded(shape: Any, dtype: Any) -> np.ndarray:
    dt = np.dtype(dtype)
    shape = (shape,) if isinstance(shape, int | np.integer) else tuple(shape)
    n = int(np.prod(shape, dtype=np.int64))
    extra = -(-PAD_BYTES // dt.itemsize)
    return np.empty(n + extra, dtype=dt)[:n].reshape(shape)


def empty(shape: Any, dtype: Any = np.float64) -> np.ndarray:
    out = _padded(shape, dtype)
    out.fill(np.nan if np.dtype(dtype).kind == "f" else 0x5A)  # garbage, as cudaMalloc gives
    return out


def full(shape: Any, fill_value: Any, dtype: Any = None) -> np.ndarray:
    out = _padded(shape, np.asarray(fill_value).dtype if dtype is None else dtype)
    out.fill(fill_value)
    return out


def zeros(shape: Any, dtype: Any = np.float64) -> np.ndarray:
    return full(shape, 0, dtype)


def ones(shape: Any, dtype: Any = np.float64) -> np.ndarray:
    return full(shape, 1, dtype)


def empty_like(a: np.ndarray, dtype: Any = None) -> np.ndarray:
    return empty(a.shape, a.dtype if dtype is None else dtype)


def zeros_like(a: np.ndarray, dtype: Any = None) -> np.ndarray:
    return zeros(a.shape, a.dtype if dtype is None else dtype)


def full_like(a: np.ndarray, fill_value: Any, dtype: Any = None) -> np.ndarray:
    return full(a.shape, fill_value, a.dtype if dtype is None else dtype)


def asarray(a: Any, dtype: Any = None) -> np.ndarray:
    src = np.asarray(a, dtype=dtype)
    out = _padded(src.shape, src.dtype)
    out[...] = src
    return out


def ascontiguousarray(a: Any, dtype: Any = None) -> np.ndarray:
    return asarray(a, dtype)


def asnumpy(a: Any) -> np.ndarray:
    return np.array(a)


class _Device:
    attributes = {"MultiProcessorCount": 2}  # small, so a fixed grid is outgrown by the tests

    def __init__(self, index: int = 0) -> None:
        self.id = index

    def synchronize(self) -> None:
        return None

    def __enter__(self) -> _Device:
        return self

    def __exit__(self, *exc: object) -> None:
        return None


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
    mod.array = asarray
    mod.RawKernel = RawKernel
    mod.ndarray = np.ndarray
    mod.cuda = types.SimpleNamespace(Device=_Device)
    mod.__gpulab_fake__ = True
    return mod


def install(monkeypatch: Any) -> types.ModuleType:
    """Put a fake `cupy` in sys.modules for one test (pytest's monkeypatch undoes it)."""
    import sys

    mod = make()
    monkeypatch.setitem(sys.modules, "cupy", mod)
    try:  # cupyx.scipy mirrors SciPy; checks use it for library paths
        import scipy.ndimage
        import scipy.special
    except ImportError:
        return mod
    x, xs = types.ModuleType("cupyx"), types.ModuleType("cupyx.scipy")
    x.scipy, xs.ndimage, xs.special = xs, scipy.ndimage, scipy.special
    monkeypatch.setitem(sys.modules, "cupyx", x)
    monkeypatch.setitem(sys.modules, "cupyx.scipy", xs)
    monkeypatch.setitem(sys.modules, "cupyx.scipy.ndimage", scipy.ndimage)
    monkeypatch.setitem(sys.modules, "cupyx.scipy.special", scipy.special)
    return mod
