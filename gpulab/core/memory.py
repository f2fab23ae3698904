"""A memory probe for the process that runs experiments.

It reads only libraries that are already imported: probing must never be the thing that pulls
torch or CuPy into a process (the UI process calls nothing here, but tests and the CLI may).
"""

from __future__ import annotations

import contextlib
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any

_paused = 0  # how many device_queries_paused() blocks are open, in any thread
_paused_lock = threading.Lock()


@contextlib.contextmanager
def device_queries_paused() -> Iterator[None]:
    """While open, `probe` reads only host-side counters. A CUDA graph capture in the default
    (global) mode is broken by a call such as cudaMemGetInfo from any other thread of the
    process, and the worker's memory sampler is such a thread."""
    global _paused
    with _paused_lock:
        _paused += 1
    try:
        yield
    finally:
        with _paused_lock:
            _paused -= 1


def probe(device_index: int = 0) -> dict[str, Any]:
    """Allocator and device memory as seen from inside this process, in bytes."""
    reading: dict[str, Any] = {"t": time.time(), "device": device_index}
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_initialized():
        try:
            reading["torch_allocated"] = int(torch.cuda.memory_allocated(device_index))
            reading["torch_reserved"] = int(torch.cuda.memory_reserved(device_index))
            reading["torch_peak"] = int(torch.cuda.max_memory_allocated(device_index))
            if _paused:
                return reading
            free, total = torch.cuda.mem_get_info(device_index)
            reading["device_free"], reading["device_total"] = int(free), int(total)
        except Exception as exc:  # noqa: BLE001 - a dead context after an illegal address, for one: the reading says so
            reading["error"] = f"torch: {exc}"
    cupy = sys.modules.get("cupy")
    if cupy is not None:
        try:
            pool = cupy.get_default_memory_pool()
            reading["cupy_used"] = int(pool.used_bytes())
            reading["cupy_total"] = int(pool.total_bytes())
            if "device_total" not in reading and not _paused:
                with cupy.cuda.Device(device_index):
                    free, total = cupy.cuda.runtime.memGetInfo()
                reading["device_free"], reading["device_total"] = int(free), int(total)
        except Exception as exc:  # noqa: BLE001 - CuPy's error on a dead context: the reading says so
            reading.setdefault("error", f"cupy: {exc}")
    return reading


def reset_peaks(device_index: int = 0) -> None:
    """Reset torch's peak-memory counters for the device, if torch has initialised CUDA."""
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_initialized():
        with contextlib.suppress(Exception):
            torch.cuda.reset_peak_memory_stats(device_index)
