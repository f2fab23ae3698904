"""A stand-in `cupy` (and `cupyx`) that imports fine and fails like CuPy on a machine whose GPU
is not visible: every use raises `cupy.cuda.runtime.CUDARuntimeError: cudaErrorNoDevice`.

Real CuPy imports without a GPU and only fails on first use, so code that guards it with
`except ImportError` alone crashes there. `write_no_gpu_cupy(dir)` writes the package into
`dir`; put `dir` first on PYTHONPATH of a child process to run code against it.
"""

from __future__ import annotations

from pathlib import Path

NO_DEVICE = "cudaErrorNoDevice: no CUDA-capable device is detected"

_CUPY = f'''
"""Fake CuPy without a visible GPU (gpulab.testing.no_gpu_cupy)."""
import types as _types


class CUDARuntimeError(RuntimeError):
    pass


def _fail(*args, **kwargs):
    raise CUDARuntimeError({NO_DEVICE!r})


def _is_available():
    # as CuPy does it: ask for the device count, treat the runtime error as "no GPU"
    try:
        _fail()
    except CUDARuntimeError:
        return False


runtime = _types.ModuleType("cupy.cuda.runtime")
runtime.CUDARuntimeError = CUDARuntimeError
runtime.getDeviceCount = _fail
cuda = _types.ModuleType("cupy.cuda")
cuda.runtime = runtime
cuda.is_available = _is_available
is_available = _is_available
__version__ = "0.0+no-gpu-fake"
float32, float64, int32 = "float32", "float64", "int32"


def __getattr__(name):
    if name.startswith("__"):
        raise AttributeError(name)
    return _fail
'''

_NDIMAGE = """
def __getattr__(name):
    if name.startswith("__"):
        raise AttributeError(name)
    from cupy import _fail
    return _fail
"""


def write_no_gpu_cupy(directory: Path) -> Path:
    """Write the fake `cupy` and `cupyx.scipy.ndimage` packages under `directory`; return it."""
    root = Path(directory)
    (root / "cupy").mkdir(parents=True, exist_ok=True)
    (root / "cupy" / "__init__.py").write_text(_CUPY, encoding="utf-8")
    (root / "cupyx" / "scipy").mkdir(parents=True, exist_ok=True)
    (root / "cupyx" / "__init__.py").write_text("", encoding="utf-8")
    (root / "cupyx" / "scipy" / "__init__.py").write_text("", encoding="utf-8")
    (root / "cupyx" / "scipy" / "ndimage.py").write_text(_NDIMAGE, encoding="utf-8")
    return root
