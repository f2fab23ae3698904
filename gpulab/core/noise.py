"""What else was using the machine when a timing came out noisy (see timing.NOISY_SPREAD).

Called only for a noisy row, so its costs (an NVML init, a process list) are paid rarely. Every
probe is optional: a machine without NVML still gets the load average, one without either gets
the spread alone.
"""

from __future__ import annotations

import contextlib
import os
from typing import Any


def load_average() -> str:
    """'load average 3.1 on 16 cores', or '' where the OS has none."""
    try:
        one, _, _ = os.getloadavg()
    except (OSError, AttributeError):
        return ""
    return f"load average {one:.1f} on {os.cpu_count() or '?'} cores"


def other_gpu_processes() -> int | None:
    """Compute processes other than this one on any GPU NVML sees; None when NVML cannot say."""
    try:
        import pynvml
    except ImportError:
        return None
    try:
        pynvml.nvmlInit()
    except Exception:  # noqa: BLE001 - no NVML here: the count is unknown, not an error
        return None
    try:
        me = os.getpid()
        others: set[int] = set()
        for i in range(pynvml.nvmlDeviceGetCount()):
            handle = pynvml.nvmlDeviceGetHandleByIndex(i)
            for proc in pynvml.nvmlDeviceGetComputeRunningProcesses(handle):
                pid = int(getattr(proc, "pid", 0))
                if pid and pid != me:
                    others.add(pid)
        return len(others)
    except Exception:  # noqa: BLE001 - any NVML error: the count is unknown, not an error
        return None
    finally:
        with contextlib.suppress(Exception):
            pynvml.nvmlShutdown()


def noisy_note(timing: Any, *, gpu: bool) -> str:
    """The note of a row whose timed runs spread wildly even after being taken twice."""
    again = " even after re-measuring" if timing.remeasured else ""
    parts = [f"noisy: the slowest run took {timing.spread:.1f}x the fastest{again}"]
    load = load_average()
    if load:
        parts.append(load)
    if gpu:
        others = other_gpu_processes()
        if others:
            parts.append(f"{others} other process(es) on the GPU")
    return "; ".join(parts) + "; the median is not a steady figure"
