"""Dynamic readings of one GPU at one instant; every field a value or an NA with the reason."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field, fields
from typing import Any, Protocol

from gpulab.telemetry.nvml import NvmlSession
from gpulab.telemetry.values import NA, jsonable

# nvmlClocksEventReason* bits (formerly "throttle reasons"), in words a learner can read.
THROTTLE_WORDS = {
    0x1: "idle",
    0x2: "application clock setting",
    0x4: "power cap",
    0x8: "hardware slowdown",
    0x10: "sync boost",
    0x20: "thermal limit (software)",
    0x40: "thermal limit (hardware)",
    0x80: "power brake (hardware)",
    0x100: "display clock setting",
}
MEMORY_V2 = 0x02000028  # nvmlMemory_v2: sizeof(nvmlMemory_v2_t) | 2 << 24


def decode_throttle(mask: int) -> list[str]:
    """The names of NVML's throttle-reason bits in `mask`."""
    if mask == 0:
        return ["none"]
    words = [w for bit, w in THROTTLE_WORDS.items() if mask & bit]
    rest = mask & ~sum(THROTTLE_WORDS)
    if rest:
        words.append(f"other (0x{rest:x})")
    return words


class ProcessTable(Protocol):
    """What this process can see of other processes (injectable: tests and containers differ)."""

    def visible(self, pid: int) -> bool:
        """True when `pid` exists in the process table this process can read."""
        ...

    def name(self, pid: int) -> str | NA:
        """The process's command name, or NA with why it cannot be read."""
        ...


class HostProcesses:
    """/proc of this PID namespace."""

    def __init__(self, root: str = "/proc") -> None:
        self.root = root

    def visible(self, pid: int) -> bool:
        """True when `pid` is visible in this process's /proc."""
        return os.path.exists(os.path.join(self.root, str(pid)))

    def name(self, pid: int) -> str | NA:
        """The process's command name, or NA."""
        try:
            with open(os.path.join(self.root, str(pid), "comm")) as fh:
                return fh.read().strip()
        except OSError:
            return NA("process not visible here")


CONTAINER_PIDS = NA(
    "NVML reports PIDs of the host's PID namespace; this runs in a container's, so they "
    "cannot be matched to processes here"
)


@dataclass
class ProcessInfo:
    """One process on a GPU: pid, kind, memory used and name."""

    pid: int
    kind: str  # compute, graphics, or compute+graphics
    used_memory: int | NA
    name: str | NA

    def to_dict(self) -> dict[str, Any]:
        """The process as JSON-ready data."""
        return {f.name: jsonable(getattr(self, f.name)) for f in fields(self)}


@dataclass
class GpuSnapshot:
    """One GPU's readings at one time: memory, utilisation, clocks, temperature, power, PCIe and
    processes."""

    nvml_index: int
    t: float
    memory_total: int | NA = NA("not read")
    memory_used: int | NA = NA("not read")
    memory_free: int | NA = NA("not read")
    memory_reserved: int | NA = NA("not read")  # by the driver; only the v2 call says
    gpu_util: int | NA = NA("not read")  # percent of time a kernel ran
    mem_util: int | NA = NA("not read")  # percent of time memory was read or written
    temperature_c: int | NA = NA("not read")
    power_w: float | NA = NA("not read")
    sm_clock_mhz: int | NA = NA("not read")
    mem_clock_mhz: int | NA = NA("not read")
    throttle: list[str] | NA = NA("not read")
    pcie_gen: int | NA = NA("not read")
    pcie_width: int | NA = NA("not read")
    pcie_tx: float | NA = NA("not read")  # bytes/s, GPU to host
    pcie_rx: float | NA = NA("not read")  # bytes/s, host to GPU
    nvlink_tx: float | NA = NA("not read")  # bytes/s sent over every NVLink (the reader's)
    nvlink_rx: float | NA = NA("not read")  # bytes/s received
    processes: list[ProcessInfo] | NA = field(default_factory=list)
    pid_note: NA | None = None  # set when NVML's PIDs are not this namespace's

    @property
    def memory_in_use(self) -> int | NA:
        """Everything not free (used plus driver-reserved): what the device bar shows."""
        if isinstance(self.memory_total, NA) or isinstance(self.memory_free, NA):
            return self.memory_used
        return self.memory_total - self.memory_free

    def process(self, pid: int | None) -> ProcessInfo | None:
        """The process `pid` on this GPU, or None."""
        if pid is None or isinstance(self.processes, NA):
            return None
        return next((p for p in self.processes if p.pid == pid), None)

    def to_dict(self) -> dict[str, Any]:
        """The snapshot as JSON-ready data."""
        out = {f.name: jsonable(getattr(self, f.name)) for f in fields(self)}
        out["memory_in_use"] = jsonable(self.memory_in_use)
        return out


def read_snapshot(
    session: NvmlSession,
    i: int,
    procs: ProcessTable | None = None,
    now: float | None = None,
    *,
    pcie_throughput: bool = True,
) -> GpuSnapshot:
    """Never raises: a call NVML refuses becomes an NA in its field.

    `pcie_throughput=False` skips the two PCIe counters, which block ~20 ms each and were most
    of a frame's cost on an H200 (42 ms a frame); the caller fills them from an earlier read."""
    s = GpuSnapshot(nvml_index=i, t=time.time() if now is None else now)
    lost = session.lost(i)
    if lost is not None or not session.ok:
        na = lost or session.error or NA("NVML is not initialised")
        for f in fields(GpuSnapshot):
            if f.name not in ("nvml_index", "t", "pid_note"):
                setattr(s, f.name, na)
        return s
    _memory(session, i, s)
    util = session.call(i, "nvmlDeviceGetUtilizationRates")
    s.gpu_util = util if isinstance(util, NA) else int(util.gpu)
    s.mem_util = util if isinstance(util, NA) else int(util.memory)
    s.temperature_c = session.call(i, "nvmlDeviceGetTemperature", 0)  # NVML_TEMPERATURE_GPU
    power = session.call(i, "nvmlDeviceGetPowerUsage")
    s.power_w = power if isinstance(power, NA) else power / 1000.0
    s.sm_clock_mhz = session.call(i, "nvmlDeviceGetClockInfo", 1)  # NVML_CLOCK_SM
    s.mem_clock_mhz = session.call(i, "nvmlDeviceGetClockInfo", 2)  # NVML_CLOCK_MEM
    s.throttle = _throttle(session, i)
    s.pcie_gen = session.call(i, "nvmlDeviceGetCurrPcieLinkGeneration")
    s.pcie_width = session.call(i, "nvmlDeviceGetCurrPcieLinkWidth")
    if pcie_throughput:
        tx = session.call(i, "nvmlDeviceGetPcieThroughput", 0)  # TX bytes, in KB/s
        rx = session.call(i, "nvmlDeviceGetPcieThroughput", 1)
        s.pcie_tx = tx if isinstance(tx, NA) else tx * 1000.0
        s.pcie_rx = rx if isinstance(rx, NA) else rx * 1000.0
    s.processes, s.pid_note = _processes(session, i, procs or HostProcesses())
    if session.lost(i) is not None:  # it fell off the bus part-way: say so everywhere
        return read_snapshot(session, i, procs, s.t, pcie_throughput=pcie_throughput)
    return s


def _memory(session: NvmlSession, i: int, s: GpuSnapshot) -> None:
    mem = session.call(i, "nvmlDeviceGetMemoryInfo", MEMORY_V2)
    if isinstance(mem, NA):
        s.memory_reserved = NA(f"needs the v2 memory call: {mem.reason}")
        mem = session.call(i, "nvmlDeviceGetMemoryInfo")
        if isinstance(mem, NA):
            s.memory_total = s.memory_used = s.memory_free = mem
            return
    else:
        s.memory_reserved = int(mem.reserved)
    s.memory_total, s.memory_used, s.memory_free = int(mem.total), int(mem.used), int(mem.free)


def _throttle(session: NvmlSession, i: int) -> list[str] | NA:
    name = "nvmlDeviceGetCurrentClocksEventReasons"
    if getattr(session.nvml, name, None) is None:
        name = "nvmlDeviceGetCurrentClocksThrottleReasons"
    mask = session.call(i, name)
    return mask if isinstance(mask, NA) else decode_throttle(int(mask))


def _processes(
    session: NvmlSession, i: int, procs: ProcessTable
) -> tuple[list[ProcessInfo] | NA, NA | None]:
    compute = session.call(i, "nvmlDeviceGetComputeRunningProcesses")
    graphics = session.call(i, "nvmlDeviceGetGraphicsRunningProcesses")
    if isinstance(compute, NA) and isinstance(graphics, NA):
        return compute, None
    seen: dict[int, ProcessInfo] = {}
    for kind, listing in (("compute", compute), ("graphics", graphics)):
        if isinstance(listing, NA):
            continue
        for p in listing:
            pid = int(p.pid)
            used = p.usedGpuMemory
            mem: int | NA = (
                NA("the driver does not report it (WDDM or MIG)") if used is None else int(used)
            )
            if pid in seen:  # one process with both contexts: NVML counts its memory once each
                seen[pid].kind = "compute+graphics"
                continue
            seen[pid] = ProcessInfo(pid=pid, kind=kind, used_memory=mem, name=NA("unknown"))
    note = None
    for p in seen.values():
        if procs.visible(p.pid):
            p.name = procs.name(p.pid)
        else:
            p.name = CONTAINER_PIDS
            note = CONTAINER_PIDS
    return sorted(seen.values(), key=lambda p: p.pid), note
