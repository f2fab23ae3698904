"""The memory gauge's arithmetic, headless: NVML's view of the device joined with the worker's.

NVML knows the device (used / total) and how much each process holds, but nothing about what a
process does with it. The worker's allocator readings (`core.memory.probe()`: torch allocated /
reserved / peak, CuPy pool) know the inside of one process. Joined on the worker's PID:

    worker (NVML)   = the worker process's entry in NVML's process list
    CUDA context    = worker (NVML) - torch reserved - CuPy pool total   (what no allocator owns:
                      the context, cuBLAS/cuDNN workspaces, kernels' code)
    other processes = every other NVML process entry

When the PIDs cannot be joined (a container's PID namespace, MIG, a driver without a process
list) those lines read N/A with the reason, never a guess.
"""

from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass
from typing import Any

from gpulab.telemetry.sampler import Frame
from gpulab.telemetry.values import NA

SPARK = " ▁▂▃▄▅▆▇█"


@dataclass
class Layers:
    """The memory gauge's layers, each a byte count or NA with why."""

    device_used: int | NA
    device_total: int | NA
    worker_nvml: int | NA
    cuda_context: int | NA
    torch_reserved: int | NA
    torch_allocated: int | NA
    cupy_pool: int | NA
    other_processes: int | NA
    torch_peak: int | NA
    source: str  # "nvml", "worker" (no NVML: the worker's cudaMemGetInfo), or ""


class MemoryModel:
    """What the memory gauge shows: NVML frames and the worker's readings, and the run's peak."""

    def __init__(self, history_s: float = 180.0, clock: Any = time.time) -> None:
        self.history_s = history_s
        self.clock = clock
        self.nvml_index = 0
        self.worker_pid: int | None = None
        self.frame: Frame | None = None
        self.reading: dict[str, Any] | None = None
        self.history: deque[tuple[float, int]] = deque()
        self.job_running = False
        self.run_peak: tuple[float, int] | None = None  # (t, bytes in use) of this/last run
        self.updates = 0

    # inputs --------------------------------------------------------------------------------
    def add_frame(self, frame: Frame) -> None:
        """Take a telemetry frame: the device's memory in use now."""
        self.frame = frame
        snap = frame.snapshot(self.nvml_index)
        if snap is not None and not isinstance(snap.memory_in_use, NA):
            self._record(frame.t, int(snap.memory_in_use))
        self.updates += 1

    def add_reading(self, reading: dict[str, Any]) -> None:
        """A runner `memory` event, or the bare `core.memory.probe()` dict it carries."""
        inner = reading.get("reading")
        if isinstance(inner, dict):
            if reading.get("pid") and self.worker_pid is None:
                self.worker_pid = int(reading["pid"])
            reading = inner
        self.reading = dict(reading)
        if not self._nvml_ok() and "device_total" in reading and "device_free" in reading:
            t = float(reading.get("t") or self.clock())
            self._record(t, int(reading["device_total"]) - int(reading["device_free"]))
        self.updates += 1

    def job_started(self) -> None:
        """A job started: its peak starts over."""
        self.job_running = True
        self.run_peak = None

    def job_finished(self) -> None:
        """The job ended."""
        self.job_running = False

    def _record(self, t: float, used: int) -> None:
        self.history.append((t, used))
        while self.history and self.history[0][0] < t - self.history_s:
            self.history.popleft()
        if self.job_running and (self.run_peak is None or used > self.run_peak[1]):
            self.run_peak = (t, used)

    def _nvml_ok(self) -> bool:
        return bool(self.frame and self.frame.inventory.available and self.frame.snapshots)

    # outputs -------------------------------------------------------------------------------
    def layers(self) -> Layers:
        """The gauge's layers now."""
        r = self.reading or {}
        no_worker = NA("no reading from the worker yet")
        torch_reserved = _get(r, "torch_reserved", "torch has not touched CUDA in the worker")
        torch_allocated = _get(r, "torch_allocated", "torch has not touched CUDA in the worker")
        torch_peak = _get(r, "torch_peak", "torch has not touched CUDA in the worker")
        cupy_pool = _get(r, "cupy_total", "CuPy is not loaded in the worker")
        if not r:
            torch_reserved = torch_allocated = torch_peak = cupy_pool = no_worker
        snap = self.frame.snapshot(self.nvml_index) if self.frame else None
        if snap is None:
            why = self._no_nvml_reason()
            total = _get(r, "device_total", why.reason)
            used = (
                int(r["device_total"]) - int(r["device_free"])
                if "device_total" in r and "device_free" in r
                else why
            )
            return Layers(
                used,
                total,
                why,
                why,
                torch_reserved,
                torch_allocated,
                cupy_pool,
                why,
                torch_peak,
                "worker" if not isinstance(used, NA) else "",
            )
        worker_nvml, others = self._processes(snap)
        context: int | NA = worker_nvml
        if not isinstance(worker_nvml, NA):
            owned = sum(v for v in (torch_reserved, cupy_pool) if not isinstance(v, NA))
            context = max(0, worker_nvml - owned)
        return Layers(
            snap.memory_in_use,
            snap.memory_total,
            worker_nvml,
            context,
            torch_reserved,
            torch_allocated,
            cupy_pool,
            others,
            torch_peak,
            "nvml",
        )

    def _no_nvml_reason(self) -> NA:
        if self.frame is None:
            return NA("waiting for the first NVML sample")
        inv = self.frame.inventory
        if not inv.available:
            return NA(inv.reason.split(". ")[0] if inv.reason else "NVML is not available")
        return NA(f"NVML has no GPU {self.nvml_index}")

    def _processes(self, snap: Any) -> tuple[int | NA, int | NA]:
        procs = snap.processes
        if isinstance(procs, NA):
            return procs, procs
        if snap.pid_note is not None:
            return snap.pid_note, snap.pid_note
        if self.worker_pid is None:
            worker: int | NA = NA("the worker has not started")
        else:
            mine = snap.process(self.worker_pid)
            worker = (
                NA("the worker holds no memory on this GPU yet")
                if mine is None
                else mine.used_memory
            )
        others = [p for p in procs if p.pid != self.worker_pid]
        if any(isinstance(p.used_memory, NA) for p in others):
            return worker, NA("the driver does not report per-process memory")
        return worker, sum(int(p.used_memory) for p in others)

    def spark(self, width: int) -> tuple[str, int | None]:
        """The history as `width` block characters (max per time bucket, scaled to the device's
        total), and the column of this run's peak (None if not in view)."""
        if width <= 0:
            return "", None
        total = self.layers().device_total
        top = (
            total
            if not isinstance(total, NA) and total > 0
            else max((u for _, u in self.history), default=0)
        )
        now = self.history[-1][0] if self.history else self.clock()
        start = now - self.history_s
        step = self.history_s / width
        cols = [-1] * width
        for t, used in self.history:
            c = min(width - 1, max(0, int((t - start) / step)))
            cols[c] = max(cols[c], used)
        chars = []
        for used in cols:
            if used < 0 or top <= 0:
                chars.append(" ")
            else:
                level = min(8, max(1, round(used / top * 8))) if used > 0 else 1
                chars.append(SPARK[level])
        peak_col = None
        if self.run_peak is not None and self.run_peak[0] >= start:
            peak_col = min(width - 1, max(0, int((self.run_peak[0] - start) / step)))
        return "".join(chars), peak_col


def _get(r: dict[str, Any], key: str, why: str) -> int | NA:
    value = r.get(key)
    return int(value) if isinstance(value, (int, float)) else NA(why)
