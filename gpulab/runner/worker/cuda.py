"""The worker's CUDA state: the context it creates before the first job (so the first job does
not pay for it), whether the driver says it holds one (a spare must not), whether it still works
after a failed job, and the memory a failed job held, given back.

Separate from serve.py, which serves jobs, because this is the only part that touches the GPU
runtime (and the one a machine without a GPU cannot exercise): torch and CuPy are taken from
sys.modules or imported inside the functions, never at module level.
"""

from __future__ import annotations

import contextlib
import ctypes
import gc
import sys
from typing import Any


def primary_context_active(device: int) -> bool | None:
    """Whether this process holds a CUDA context on `device`, as the driver says (None: no driver).

    A spare must hold none: a context costs GPU memory, and the spare is waiting, not working.
    """
    if not sys.platform.startswith("linux"):
        return None
    try:
        cuda = ctypes.CDLL("libcuda.so.1")
    except OSError:
        return None
    dev, flags, active = ctypes.c_int(), ctypes.c_uint(), ctypes.c_int()
    try:
        if cuda.cuInit(0) != 0 or cuda.cuDeviceGet(ctypes.byref(dev), device) != 0:
            return None
        if cuda.cuDevicePrimaryCtxGetState(dev, ctypes.byref(flags), ctypes.byref(active)) != 0:
            return None
    except AttributeError:
        return None
    return bool(active.value)


def init_cuda(inv: Any, d: int) -> None:
    """Create the CUDA context on device `d` now, so the first job does not pay for it."""
    if d >= sum(1 for dev in inv.devices if dev.kind == "cuda"):
        return  # no such GPU: each job on it fails with a message that says so (run_job)
    if inv.available("torch-cuda"):
        import torch

        torch.cuda.set_device(d)
        torch.zeros(1, device=f"cuda:{d}").add_(1)
        torch.cuda.synchronize(d)
    if inv.available("cupy"):
        import cupy

        cupy.cuda.Device(d).use()
        cupy.zeros(1, dtype=cupy.float32).sum()
        cupy.cuda.Device(d).synchronize()


def cuda_broken(inventory: Any, device: int) -> str:
    """Why CUDA can no longer be used in this process, or "" when it still works."""
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_initialized():
        try:
            torch.cuda.synchronize(device)
        except Exception as exc:  # noqa: BLE001 - any error from synchronize means the context is dead
            return f"the CUDA context is dead: {str(exc).strip().splitlines()[0]}"
    cupy = sys.modules.get("cupy")
    if cupy is not None and inventory is not None and inventory.available("cupy"):
        try:
            cupy.cuda.Device(device).synchronize()
        except Exception as exc:  # noqa: BLE001 - any error from synchronize means the context is dead
            return f"the CUDA context is dead: {str(exc).strip().splitlines()[0]}"
    return ""


def release_memory() -> None:
    """Give back what a failed job held (frames of its traceback, allocator caches)."""
    gc.collect()
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_initialized():
        with contextlib.suppress(Exception):
            torch.cuda.empty_cache()
    cupy = sys.modules.get("cupy")
    if cupy is not None:
        with contextlib.suppress(Exception):
            cupy.get_default_memory_pool().free_all_blocks()
            cupy.get_default_pinned_memory_pool().free_all_blocks()
