"""What the GPU was doing while a figure was timed: clocks, power, temperature, throttling.

A graded figure taken while the GPU held its power limit, or slowed for heat, is not the figure
the learner's code earns on a calm GPU. So the grader opens a `ClockWindow` around its timed
rounds and marks it after each round: the SM and memory clocks (lowest and highest seen), the
power draw (from the energy counter across the window where the driver has one, else the mean
of the readings), the temperature, the union of NVML's clock-event reasons seen at the marks,
and the power and thermal violation time NVML accumulated over the window. `summary()` says
whether the window was throttled and in which words, so the verdict can name it and the grader
can retime it.

A GPU can be shared: another process's kernels running beside the timed rounds slow them as surely
as a power cap (an H200 shared by six test processes rejected two correct answers that pass alone).
At the close the window asks NVML which processes used the SMs or the memory since it opened
(per-process utilization samples): any beyond gpulab's own (this process, its parent, and their
children: the parent of each such pid is read, not the whole process table) make the window
`shared`, named with pid and name. A process that only holds memory, such as an idle notebook's
CUDA context, is not counted; and where the driver's pids are not this namespace's (a container),
so that this process is not among the samples, nothing is claimed.

One NVML session per process (nvmlInit costs tens of milliseconds). A mark costs a few NVML
calls of about 0.04 ms each, made between rounds, outside the timed calls.
"""

from __future__ import annotations

import os
import statistics
import time
from typing import Any

from gpulab.telemetry.nvml import NOT_FOUND, NvmlSession, error_code
from gpulab.telemetry.snapshot import HostProcesses, decode_throttle
from gpulab.telemetry.values import NA

NVML_CLOCK_SM = 1
NVML_CLOCK_MEM = 2
NVML_TEMPERATURE_GPU = 0
NVML_PERF_POLICY_POWER = 0
NVML_PERF_POLICY_THERMAL = 1
# Clock-event reasons that slow the clocks below what the card runs at when calm: power cap,
# hardware slowdown, thermal (software and hardware), hardware power brake. Idle, application
# clocks, sync boost and display settings are not the GPU being held back by its limits.
SLOWING = 0x4 | 0x8 | 0x20 | 0x40 | 0x80

_SESSION: NvmlSession | None = None


# How far back a window's question about other processes reaches at least (microseconds): NVML
# answers with each process's latest sample only, and on an H200 (driver 580.159.04) a program
# busy all through a 5 s wait had one, so a window of a few milliseconds can fall between two
LOOKBACK_US = 1_000_000


def session() -> NvmlSession:
    """This process's NVML session, opened on first use."""
    global _SESSION
    if _SESSION is None:
        _SESSION = NvmlSession()
    return _SESSION


def _text(value: Any) -> str:
    return value.decode(errors="replace") if isinstance(value, bytes) else str(value)


def _same_uuid(a: str, b: str) -> bool:
    return a.lower().removeprefix("gpu-") == b.lower().removeprefix("gpu-")


def nvml_index(inventory: Any, device_index: int, nvml: NvmlSession) -> int:
    """NVML's index of CUDA device `device_index`: CUDA and NVML may number GPUs differently
    (CUDA_VISIBLE_DEVICES), so the GPU is found by its UUID where the inventory has one."""
    uuid = ""
    for d in getattr(inventory, "devices", []):
        if d.kind == "cuda" and d.index == device_index:
            uuid = d.uuid or ""
    if not uuid:
        return device_index
    count = nvml.count()
    for i in range(count if isinstance(count, int) else 0):
        got = nvml.call(i, "nvmlDeviceGetUUID")
        if not isinstance(got, NA) and _same_uuid(_text(got), uuid):
            return i
    return device_index


def cpu_state() -> dict[str, Any]:
    """The device state of a CPU run: no temperature or clock to read, and why."""
    return {"temperature_c": None, "sm_clock_mhz": None, "na": "CPU mode: no GPU to read"}


def gpu_state(inventory: Any, device_index: int = 0, nvml: NvmlSession | None = None) -> dict:
    """The GPU's temperature (C) and SM clock (MHz) from NVML now, or None with the reason in
    `na`. `nvml`: an NvmlSession (tests pass one over the fake NVML); default one per process."""
    nvml = nvml or session()
    if not nvml.open():
        why = nvml.error.reason if nvml.error else "NVML is not available"
        return {"temperature_c": None, "sm_clock_mhz": None, "na": why}
    index = nvml_index(inventory, device_index, nvml)
    temp = nvml.call(index, "nvmlDeviceGetTemperature", NVML_TEMPERATURE_GPU)
    clock = nvml.call(index, "nvmlDeviceGetClockInfo", NVML_CLOCK_SM)
    reasons = [
        f"{k}: {v.reason}"
        for k, v in (("temperature", temp), ("clock", clock))
        if isinstance(v, NA)
    ]
    return {
        "temperature_c": None if isinstance(temp, NA) else int(temp),
        "sm_clock_mhz": None if isinstance(clock, NA) else int(clock),
        "na": "; ".join(reasons),
    }


def own_process(pid: int, root: str = "/proc") -> bool:
    """Whether `pid` is gpulab's own as seen from this process: itself, its parent, or a child
    of either (the runner's spare worker, the ranks or compile workers a check started)."""
    me, parent = os.getpid(), os.getppid()
    if pid in (me, parent):
        return True
    try:
        with open(os.path.join(root, str(pid), "stat")) as fh:
            ppid = int(fh.read().rsplit(")", 1)[1].split()[1])  # the name may hold spaces
    except (OSError, ValueError, IndexError):
        return False  # not in this namespace's table, or gone: not ours
    return ppid in (me, parent)


def _violation_ns(nvml: NvmlSession, index: int, policy: int) -> int | None:
    got = nvml.call(index, "nvmlDeviceGetViolationStatus", policy)
    if isinstance(got, NA):
        return None
    value = getattr(got, "violationTime", None)
    return int(value) if value is not None else None


class ClockWindow:
    """Readings of one GPU across a timed window: `open()`, `mark()` after each round, then
    `summary()`. Without NVML (a CPU, no permission, MIG) every reading is None and `na` says
    why; the window is then never called throttled."""

    def __init__(self, inventory: Any, device_index: int = 0, nvml: NvmlSession | None = None):
        self.inventory, self.device_index = inventory, device_index
        self.nvml = nvml or session()
        self.index = device_index
        self.na = ""
        self.sm: list[int] = []
        self.mem: list[int] = []
        self.power_mw: list[int] = []
        self.temps: list[int] = []
        self.reasons = 0
        self.reasons_read = False
        self._energy0: int | None = None
        self._energy1: int | None = None
        self._violation0: dict[int, int | None] = {}
        self._violation1: dict[int, int | None] = {}
        self._t0 = 0.0
        self._t1 = 0.0
        self.others: dict[int, int] | None = None  # pid -> highest SM or memory %, None: unread
        self._since_us = 0

    def open(self, now: float, since_us: int | None = None) -> ClockWindow:
        """Start the window at host time `now` (seconds): the counters' first readings.
        `since_us`: count other processes' use of the GPU from this wall-clock microsecond
        instead (a check's failure asks about the whole check, opened only then)."""
        if not self.nvml.open():
            self.na = self.nvml.error.reason if self.nvml.error else "NVML is not available"
            return self
        self.index = nvml_index(self.inventory, self.device_index, self.nvml)
        # NVML's samples carry wall-clock microseconds
        self._since_us = int(time.time() * 1e6) if since_us is None else since_us
        self._t0 = now
        self._energy0 = self._energy()
        self._violation0 = {p: _violation_ns(self.nvml, self.index, p) for p in self._policies}
        self.mark(now)
        return self

    _policies = (NVML_PERF_POLICY_POWER, NVML_PERF_POLICY_THERMAL)

    def _energy(self) -> int | None:
        got = self.nvml.call(self.index, "nvmlDeviceGetTotalEnergyConsumption")
        return None if isinstance(got, NA) else int(got)

    def mark(self, now: float) -> None:
        """Read the clocks, power, temperature and clock-event reasons once more (between
        rounds, never inside a timed call)."""
        if self.na or not self.nvml.ok:
            return
        self._t1 = now
        i, call = self.index, self.nvml.call
        for name, args, into in (
            ("nvmlDeviceGetClockInfo", (NVML_CLOCK_SM,), self.sm),
            ("nvmlDeviceGetClockInfo", (NVML_CLOCK_MEM,), self.mem),
            ("nvmlDeviceGetPowerUsage", (), self.power_mw),
            ("nvmlDeviceGetTemperature", (NVML_TEMPERATURE_GPU,), self.temps),
        ):
            got = call(i, name, *args)
            if not isinstance(got, NA):
                into.append(int(got))
        name = "nvmlDeviceGetCurrentClocksEventReasons"
        if getattr(self.nvml.nvml, name, None) is None:
            name = "nvmlDeviceGetCurrentClocksThrottleReasons"
        mask = call(i, name)
        if not isinstance(mask, NA):
            self.reasons |= int(mask)
            self.reasons_read = True

    def close(self, now: float) -> None:
        """End the window: the counters' last readings."""
        if self.na or not self.nvml.ok:
            return
        self.mark(now)
        self._energy1 = self._energy()
        self._violation1 = {p: _violation_ns(self.nvml, self.index, p) for p in self._policies}
        self.others = self._others()

    def _others(self) -> dict[int, int] | None:
        """Processes not gpulab's whose kernels or copies used this GPU since the window opened
        (pid -> the highest SM or memory utilization %), or None when that cannot be told."""
        fn = getattr(self.nvml.nvml, "nvmlDeviceGetProcessUtilization", None)
        handle = self.nvml.handle(self.index)
        if fn is None or isinstance(handle, NA):
            return None
        # The driver writes a process's sample once a sampling period, not per kernel: a window
        # shorter than one (a retimed round of a fast exercise) may hold no sample of a process
        # that ran all through it, so the evidence looks back at least LOOKBACK_US
        since = min(self._since_us, int(time.time() * 1e6) - LOOKBACK_US)
        try:
            samples = fn(handle, since)
        except Exception as exc:  # noqa: BLE001 - no samples, or none to be had: see the codes
            # NOT_FOUND: no process used the GPU since then; NOT_SUPPORTED and the rest: this
            # GPU or driver does not say
            return {} if error_code(exc) == NOT_FOUND else None
        busy: dict[int, int] = {}
        seen_own = False
        for sample in samples:
            if int(sample.timeStamp) < since:
                continue
            pid, use = int(sample.pid), max(int(sample.smUtil), int(sample.memUtil))
            if pid == os.getpid():
                seen_own = True
            elif use > 0 and not own_process(pid):
                busy[pid] = max(busy.get(pid, 0), use)
        if busy and not seen_own and not self._pids_are_ours(handle):
            return None  # the driver's pids are another namespace's: ours may be among these
        return busy

    def _pids_are_ours(self, handle: Any) -> bool:
        """Whether the driver's pids are this namespace's: this process, which holds a CUDA
        context while it times, is among the GPU's compute processes."""
        fn = getattr(self.nvml.nvml, "nvmlDeviceGetComputeRunningProcesses", None)
        try:
            return fn is not None and any(int(p.pid) == os.getpid() for p in fn(handle))
        except Exception:  # noqa: BLE001 - not said: claim nothing
            return False

    def _violated_ms(self, policy: int) -> float | None:
        a, b = self._violation0.get(policy), self._violation1.get(policy)
        return None if a is None or b is None else max(0, b - a) / 1e6

    def summary(self) -> dict[str, Any]:
        """What the window saw, JSON-ready: clocks (MHz, lowest and highest), power (W),
        temperature (C), the clock-event reasons seen, the violation time (ms) and whether the
        window was throttled (`throttled`, with `throttle` in words)."""
        if self.na:
            return {"na": self.na, "throttled": False}
        seconds = max(0.0, self._t1 - self._t0)
        power_w = None
        if self._energy0 is not None and self._energy1 is not None and seconds > 0.05:
            power_w = (self._energy1 - self._energy0) / 1e3 / seconds  # mJ over the window
        elif self.power_mw:
            power_w = statistics.mean(self.power_mw) / 1e3
        power_ms = self._violated_ms(NVML_PERF_POLICY_POWER)
        thermal_ms = self._violated_ms(NVML_PERF_POLICY_THERMAL)
        slowing = self.reasons & SLOWING
        words = decode_throttle(slowing) if slowing else []
        if thermal_ms and "thermal limit (software)" not in words:
            words.append(f"thermal limit for {thermal_ms:.0f} ms")
        if power_ms and "power cap" not in words:
            words.append(f"power cap for {power_ms:.0f} ms")
        names = HostProcesses()
        others = (
            None
            if self.others is None
            else [
                {"pid": pid, "name": _name(names.name(pid)), "percent": use}
                for pid, use in sorted(self.others.items())
            ]
        )
        return {
            "seconds": round(seconds, 4),
            "sm_clock_mhz": _span(self.sm),
            "mem_clock_mhz": _span(self.mem),
            "power_w": None if power_w is None else round(power_w, 1),
            "temperature_c": max(self.temps) if self.temps else None,
            "reasons": decode_throttle(self.reasons) if self.reasons_read else None,
            "power_violation_ms": power_ms,
            "thermal_violation_ms": thermal_ms,
            "throttled": bool(words),
            "throttle": words,
            "others": others,
            "shared": bool(others),
        }


def _name(name: str | NA) -> str:
    return name if isinstance(name, str) else ""


def _span(values: list[int]) -> dict[str, int] | None:
    return {"min": min(values), "max": max(values)} if values else None
