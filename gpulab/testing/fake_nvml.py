"""A fake `pynvml` with the driver variants the panes must survive. Tests inject it.

    fake = FakeNvml("mig")
    sampler = fake_sampler("two-gpus")            # a Sampler wired to a fake and its processes

Variants:
    full           one H100-like GPU, every call answers (v2 memory, clock event reasons)
    not-supported  a GPU that answers NotSupported for most dynamic fields and has no v2 memory
    old-driver     an old driver: no v2 memory call, no clock-event call (throttle reasons work)
    no-library     nvmlInit fails: libnvidia-ml.so not found (a machine without the driver)
    no-driver      nvmlInit fails: the driver is not loaded
    gpu-lost       the GPU fell off the bus: every call after init answers GpuIsLost
    two-gpus       two GPUs of different models
    mig            MIG on: per-GPU utilization and the process list are not available
    container      processes carry host PIDs that this PID namespace cannot see
    nvlink-4       four H200s, each with 18 NVLink 4 links to the NVSwitches that join them all
                   (NV18 between every pair), two NUMA nodes of two GPUs each
    pcie-2         two L40S on one PCIe switch: no NVLink at all

Every GPU has a PCI bus id, a NUMA node and the CPUs near it; `nvlink_traffic(s, {gpu: (tx, rx)})`
moves NVML's NVLink counters on as `s` seconds of that traffic (bytes/s) would.

The fake keeps memory state: `set_process_memory(gpu, pid, nbytes)` makes a process hold memory,
so gauge tests can watch "used" rise and fall like a real allocation.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

from gpulab.telemetry import nvml as codes
from gpulab.telemetry.sampler import Sampler, TelemetryReader
from gpulab.telemetry.values import NA

VARIANTS = (
    "full",
    "not-supported",
    "old-driver",
    "no-library",
    "no-driver",
    "gpu-lost",
    "two-gpus",
    "mig",
    "container",
    "nvlink-4",
    "pcie-2",
)
GiB = 2**30
MiB = 2**20

NVML_CLOCK_SM = 1
NVML_CLOCK_MEM = 2
NVML_TEMPERATURE_GPU = 0
NVML_PCIE_UTIL_TX_BYTES = 0
NVML_PCIE_UTIL_RX_BYTES = 1
nvmlMemory_v2 = 0x02000028
INVALID_ARGUMENT = 2
SWITCH = 2  # nvmlIntNvLinkDeviceType_t: the far end of a link is an NVSwitch

_MESSAGES = {
    codes.NOT_SUPPORTED: "Not Supported",
    codes.NO_PERMISSION: "Insufficient Permissions",
    codes.NOT_FOUND: "Not Found",
    codes.DRIVER_NOT_LOADED: "Driver Not Loaded",
    codes.LIBRARY_NOT_FOUND: "NVML Shared Library Not Found",
    codes.FUNCTION_NOT_FOUND: "Function Not Found",
    codes.GPU_IS_LOST: "GPU is lost",
}


class NVMLError(Exception):
    """Shaped like pynvml's: the return code in `.value`."""

    def __init__(self, value: int) -> None:
        super().__init__(_MESSAGES.get(value, f"NVML error {value}"))
        self.value = value


@dataclass(eq=False)  # compared by identity, as NVML's handles are
class FakeGpu:
    """One fake GPU's fixed facts and live readings; tests change the fields to script a scene."""

    # pynvml's handles are ctypes pointers, which cannot be hashed: neither can the fake's, so a
    # cache keyed on a handle fails here as it does on a real GPU
    __hash__ = None  # type: ignore[assignment]  # None is how a class says it cannot be hashed

    name: str = "NVIDIA H100 80GB HBM3"
    uuid: str = "GPU-8d3b6c1e-0000-4000-8000-00000000a100"
    cc: tuple[int, int] = (9, 0)
    arch: int = 9
    total: int = 80 * GiB
    reserved: int = 512 * MiB
    base_used: int = 0  # memory no listed process holds
    max_sm: int = 1980
    max_mem: int = 2619
    bus_width: int = 5120
    pcie_max: tuple[int, int] = (5, 16)
    pcie_cur: tuple[int, int] = (5, 16)
    power_limit_mw: int = 700_000
    power_mw: int = 72_500
    temp: int = 34
    util: tuple[int, int] = (0, 0)
    clocks: tuple[int, int] = (345, 2619)
    reasons: int = 0x1  # idle
    energy_mj: int = 1_000_000  # nvmlDeviceGetTotalEnergyConsumption: mJ since the driver loaded
    violation_ns: dict[int, int] = field(default_factory=dict)  # perf policy -> ns held back
    pcie_kbs: tuple[int, int] = (1_200, 800)
    mig: tuple[int, int] | None = None  # (current, pending), None: no MIG on this model
    mig_slots: list[tuple[str, int, int]] = field(default_factory=list)  # uuid, total, used
    unsupported: set[str] = field(default_factory=set)
    lost: bool = False
    processes: dict[int, int] = field(default_factory=dict)  # pid -> bytes
    graphics: dict[int, int] = field(default_factory=dict)
    # pid -> (SM %, memory %) in NVML's per-process utilization samples, stamped when asked
    # pid -> (SM %, memory %), or with a third value, the sample's wall-clock microsecond
    # (unset: now); the driver keeps a process's latest sample, written once a sampling period
    proc_util: dict[int, tuple[int, ...]] = field(default_factory=dict)
    bus_id: str = "00000000:18:00.0"
    numa: int | None = 0  # None: the driver does not say
    cpus: tuple[int, int] = (0, 31)  # the first and last CPU near the GPU
    nvlinks: list[tuple[str, int]] = field(default_factory=list)  # (remote bus id, device type)
    nvlink_version: int = 6  # nvmlNvlinkVersion_t: 6 is NVLink 4.0
    nvlink_kib: list[int] = field(default_factory=lambda: [0, 0])  # KiB sent, received


class FakeProcesses:
    """The ProcessTable the fake's PIDs live in: visible ones have names, host ones do not."""

    def __init__(self, names: dict[int, str] | None = None, hidden: bool = False) -> None:
        self.names = dict(names or {})
        self.hidden = hidden

    def visible(self, pid: int) -> bool:
        """Whether `pid` is in this PID namespace (False for every PID when hidden)."""
        return not self.hidden

    def name(self, pid: int) -> str | NA:
        """The command of `pid`, or NA when it has exited."""
        return self.names.get(pid, NA("process exited"))


class FakeNvml:
    """The subset of pynvml gpulab calls, answering as the chosen driver variant would."""

    NVMLError = NVMLError
    NVML_CLOCK_SM = NVML_CLOCK_SM
    NVML_CLOCK_MEM = NVML_CLOCK_MEM
    nvmlMemory_v2 = nvmlMemory_v2

    def __init__(self, variant: str = "full") -> None:
        if variant not in VARIANTS:
            raise ValueError(f"unknown fake NVML variant {variant!r}; one of {', '.join(VARIANTS)}")
        self.variant = variant
        self.lock = threading.Lock()
        self.calls = 0
        self.initialised = False
        self.init_error: int | None = None
        self.driver = "580.95.05"
        self.cuda = 13000
        self.missing: set[str] = set()  # functions this "binding" lacks
        self.gpus = [FakeGpu(processes={4242: 1 * GiB}, base_used=0)]
        self.procs = FakeProcesses({4242: "python3"})
        self.ancestors: dict[tuple[int, int], int] = {}  # (i, j), i < j -> NVML topology level
        self.field_us = 1_000_000  # the time NVML stamps its field values with, microseconds
        self._configure(variant)

    def _configure(self, variant: str) -> None:
        gpu = self.gpus[0]
        if variant == "not-supported":
            gpu.name = "NVIDIA Example Board"
            gpu.unsupported = {
                "nvmlDeviceGetMemoryInfo_v2",
                "nvmlDeviceGetUtilizationRates",
                "nvmlDeviceGetPowerUsage",
                "nvmlDeviceGetEnforcedPowerLimit",
                "nvmlDeviceGetPcieThroughput",
                "nvmlDeviceGetCurrentClocksEventReasons",
                "nvmlDeviceGetMemoryBusWidth",
                "nvmlDeviceGetTemperature",
                "nvmlDeviceGetComputeRunningProcesses",
                "nvmlDeviceGetGraphicsRunningProcesses",
            }
        elif variant == "old-driver":
            self.driver, self.cuda = "470.256.02", 11040
            gpu.name, gpu.cc, gpu.arch = "Tesla T4", (7, 5), 6
            gpu.total, gpu.max_mem, gpu.bus_width, gpu.pcie_max = 15 * GiB, 5001, 256, (3, 16)
            gpu.pcie_cur, gpu.power_limit_mw = (3, 16), 70_000
            gpu.unsupported = {"nvmlDeviceGetMemoryInfo_v2"}
            self.missing = {"nvmlDeviceGetCurrentClocksEventReasons"}
        elif variant == "no-library":
            self.init_error = codes.LIBRARY_NOT_FOUND
        elif variant == "no-driver":
            self.init_error = codes.DRIVER_NOT_LOADED
        elif variant == "gpu-lost":
            gpu.lost = True
        elif variant == "two-gpus":
            second = FakeGpu(
                name="NVIDIA A100-SXM4-40GB",
                uuid="GPU-1f2e3d4c-0000-4000-8000-00000000a200",
                cc=(8, 0),
                arch=7,
                total=40 * GiB,
                max_sm=1410,
                max_mem=1215,
                pcie_max=(4, 16),
                pcie_cur=(4, 16),
                power_limit_mw=400_000,
                power_mw=55_000,
                temp=29,
                bus_id="00000000:3b:00.0",
            )
            self.gpus.append(second)
        elif variant == "mig":
            gpu.mig = (1, 1)
            gpu.mig_slots = [
                ("MIG-11111111-0000-4000-8000-000000000001", 40 * GiB, 1 * GiB),
                ("MIG-22222222-0000-4000-8000-000000000002", 20 * GiB, 0),
            ]
            gpu.unsupported = {
                "nvmlDeviceGetUtilizationRates",
                "nvmlDeviceGetComputeRunningProcesses",
                "nvmlDeviceGetGraphicsRunningProcesses",
            }
        elif variant == "container":
            gpu.processes = {3_100_417: 1 * GiB, 3_100_999: 2 * GiB}
            self.procs = FakeProcesses(hidden=True)
        elif variant == "nvlink-4":
            self.gpus = [self._h200(i) for i in range(4)]
            self.ancestors = {(0, 1): 40, (2, 3): 40}  # the others cross the CPU sockets: SYS
        elif variant == "pcie-2":
            self.gpus = [
                FakeGpu(
                    name="NVIDIA L40S",
                    uuid=f"GPU-5a5a5a5a-0000-4000-8000-00000000c40{i}",
                    cc=(8, 9),
                    arch=8,
                    total=48 * GiB,
                    max_sm=2520,
                    max_mem=9001,
                    bus_width=384,
                    pcie_max=(4, 16),
                    pcie_cur=(4, 16),
                    power_limit_mw=350_000,
                    power_mw=38_000 + 1_000 * i,
                    bus_id=f"00000000:{0x41 + i:02x}:00.0",
                    processes={4242: 1 * GiB} if i == 0 else {},
                )
                for i in range(2)
            ]
            self.ancestors = {(0, 1): 10}  # one PCIe switch

    @staticmethod
    def _h200(i: int) -> FakeGpu:
        switches = [f"00000000:{0xA0 + k:02x}:00.0" for k in range(4)]
        return FakeGpu(
            name="NVIDIA H200",
            uuid=f"GPU-3c3c3c3c-0000-4000-8000-0000000h200{i}",
            total=143771 * MiB,
            max_mem=3201,
            bus_width=6144,
            power_limit_mw=700_000,
            power_mw=118_000 + 3_000 * i,
            temp=31 + i,
            bus_id=f"00000000:{0x18 + 0x20 * i:02x}:00.0",
            numa=0 if i < 2 else 1,
            cpus=(0, 47) if i < 2 else (48, 95),
            nvlinks=[(switches[k % 4], SWITCH) for k in range(18)],
            processes={4242: 1 * GiB} if i == 0 else {},
        )

    # test controls --------------------------------------------------------------------------
    def set_process_memory(self, gpu: int, pid: int, nbytes: int) -> None:
        """Give `pid` `nbytes` of GPU memory on GPU `gpu` (0 or less: the process leaves it)."""
        with self.lock:
            if nbytes > 0:
                self.gpus[gpu].processes[pid] = nbytes
            else:
                self.gpus[gpu].processes.pop(pid, None)

    def nvlink_traffic(self, seconds: float, rates: dict[int, tuple[float, float]]) -> None:
        """`seconds` pass; GPU g's NVLink counters move on by its (sent, received) bytes/s in
        `rates` (the others' stay: no traffic)."""
        with self.lock:
            for gpu, (tx, rx) in rates.items():
                counters = self.gpus[gpu].nvlink_kib
                counters[0] += round(tx * seconds / 1024)
                counters[1] += round(rx * seconds / 1024)
            self.field_us += round(seconds * 1e6)

    def lose_gpu(self, gpu: int = 0) -> None:
        """Make GPU `gpu` fall off the bus: every later read of it fails as NVML's does."""
        self.gpus[gpu].lost = True

    # plumbing -------------------------------------------------------------------------------
    def _gpu(self, handle: Any, fn: str) -> FakeGpu:
        self.calls += 1
        if not self.initialised:
            raise NVMLError(1)
        gpu = handle if isinstance(handle, FakeGpu) else None
        if gpu is None:
            raise NVMLError(2)
        if gpu.lost:
            raise NVMLError(codes.GPU_IS_LOST)
        if fn in gpu.unsupported:
            raise NVMLError(codes.NOT_SUPPORTED)
        return gpu

    def __getattribute__(self, name: str) -> Any:
        if name in object.__getattribute__(self, "missing"):
            raise AttributeError(name)
        return object.__getattribute__(self, name)

    # the pynvml surface ---------------------------------------------------------------------
    def nvmlInit(self) -> None:
        """Start the fake session, or raise `init_error` as a broken driver would."""
        if self.init_error is not None:
            raise NVMLError(self.init_error)
        self.initialised = True

    def nvmlShutdown(self) -> None:
        """End the session: device calls fail until the next nvmlInit."""
        self.initialised = False

    def nvmlSystemGetDriverVersion(self) -> str:
        """The driver version string, e.g. "570.86.15"."""
        return self.driver

    def nvmlSystemGetCudaDriverVersion_v2(self) -> int:
        """The CUDA version the driver supports, as NVML encodes it (12080 for 12.8)."""
        return self.cuda

    def nvmlSystemGetNVMLVersion(self) -> str:
        """NVML's own version string, built from the CUDA and driver versions."""
        return f"{self.cuda // 1000}.{self.driver}"

    def nvmlDeviceGetCount(self) -> int:
        """How many fake GPUs there are (fails before nvmlInit)."""
        if not self.initialised:
            raise NVMLError(1)
        return len(self.gpus)

    def nvmlDeviceGetHandleByIndex(self, index: int) -> FakeGpu:
        """The handle of GPU `index`, or NVML's invalid-argument error."""
        if not self.initialised:
            raise NVMLError(1)
        if not 0 <= index < len(self.gpus):
            raise NVMLError(2)
        return self.gpus[index]

    def nvmlDeviceGetName(self, h: Any) -> str:
        """The GPU's marketing name."""
        return self._gpu(h, "nvmlDeviceGetName").name

    def nvmlDeviceGetUUID(self, h: Any) -> str:
        """The UUID of a GPU or of a MIG slice."""
        if isinstance(h, tuple):  # a MIG device handle: (parent, slot)
            return h[0].mig_slots[h[1]][0]
        return self._gpu(h, "nvmlDeviceGetUUID").uuid

    def nvmlDeviceGetCudaComputeCapability(self, h: Any) -> tuple[int, int]:
        """(major, minor) compute capability."""
        return self._gpu(h, "nvmlDeviceGetCudaComputeCapability").cc

    def nvmlDeviceGetArchitecture(self, h: Any) -> int:
        """NVML's architecture code (9 for Hopper)."""
        return self._gpu(h, "nvmlDeviceGetArchitecture").arch

    def nvmlDeviceGetMemoryInfo(self, h: Any, version: int | None = None) -> SimpleNamespace:
        """total, used and free bytes of a GPU or MIG slice."""
        if isinstance(h, tuple):
            _, total, used = h[0].mig_slots[h[1]]
            return SimpleNamespace(total=total, used=used, free=total - used)
        name = "nvmlDeviceGetMemoryInfo_v2" if version else "nvmlDeviceGetMemoryInfo"
        if version and name in self._gpu(h, "nvmlDeviceGetMemoryInfo").unsupported:
            # an old libnvidia-ml lacks the symbol: pynvml raises FunctionNotFound
            raise NVMLError(codes.FUNCTION_NOT_FOUND)
        gpu = self._gpu(h, name)
        with self.lock:
            held = gpu.base_used + sum(gpu.processes.values()) + sum(gpu.graphics.values())
        if version:
            free = gpu.total - gpu.reserved - held
            return SimpleNamespace(total=gpu.total, reserved=gpu.reserved, used=held, free=free)
        return SimpleNamespace(total=gpu.total, used=held + gpu.reserved, free=gpu.total - held)

    def nvmlDeviceGetMaxClockInfo(self, h: Any, clock: int) -> int:
        """Maximum SM or memory clock in MHz."""
        gpu = self._gpu(h, "nvmlDeviceGetMaxClockInfo")
        return gpu.max_sm if clock == NVML_CLOCK_SM else gpu.max_mem

    def nvmlDeviceGetClockInfo(self, h: Any, clock: int) -> int:
        """Current SM or memory clock in MHz."""
        gpu = self._gpu(h, "nvmlDeviceGetClockInfo")
        return gpu.clocks[0] if clock == NVML_CLOCK_SM else gpu.clocks[1]

    def nvmlDeviceGetMemoryBusWidth(self, h: Any) -> int:
        """Memory bus width in bits."""
        return self._gpu(h, "nvmlDeviceGetMemoryBusWidth").bus_width

    def nvmlDeviceGetMaxPcieLinkGeneration(self, h: Any) -> int:
        """Highest PCIe generation the link supports."""
        return self._gpu(h, "nvmlDeviceGetMaxPcieLinkGeneration").pcie_max[0]

    def nvmlDeviceGetMaxPcieLinkWidth(self, h: Any) -> int:
        """Widest PCIe link (lanes) the slot supports."""
        return self._gpu(h, "nvmlDeviceGetMaxPcieLinkWidth").pcie_max[1]

    def nvmlDeviceGetCurrPcieLinkGeneration(self, h: Any) -> int:
        """PCIe generation the link runs at now."""
        return self._gpu(h, "nvmlDeviceGetCurrPcieLinkGeneration").pcie_cur[0]

    def nvmlDeviceGetCurrPcieLinkWidth(self, h: Any) -> int:
        """PCIe lanes the link uses now."""
        return self._gpu(h, "nvmlDeviceGetCurrPcieLinkWidth").pcie_cur[1]

    def nvmlDeviceGetPcieThroughput(self, h: Any, counter: int) -> int:
        """PCIe traffic in KB/s for `counter` (0 transmit, 1 receive)."""
        return self._gpu(h, "nvmlDeviceGetPcieThroughput").pcie_kbs[counter]

    def nvmlDeviceGetEnforcedPowerLimit(self, h: Any) -> int:
        """The power limit in milliwatts."""
        return self._gpu(h, "nvmlDeviceGetEnforcedPowerLimit").power_limit_mw

    def nvmlDeviceGetPowerUsage(self, h: Any) -> int:
        """The power draw in milliwatts."""
        return self._gpu(h, "nvmlDeviceGetPowerUsage").power_mw

    def nvmlDeviceGetTemperature(self, h: Any, sensor: int) -> int:
        """GPU temperature in °C (every sensor reads the same)."""
        return self._gpu(h, "nvmlDeviceGetTemperature").temp

    def nvmlDeviceGetUtilizationRates(self, h: Any) -> SimpleNamespace:
        """Percent of time a kernel ran (`gpu`) and memory was busy (`memory`)."""
        gpu = self._gpu(h, "nvmlDeviceGetUtilizationRates")
        return SimpleNamespace(gpu=gpu.util[0], memory=gpu.util[1])

    def nvmlDeviceGetTotalEnergyConsumption(self, h: Any) -> int:
        """Energy since the driver loaded, in millijoules."""
        return self._gpu(h, "nvmlDeviceGetTotalEnergyConsumption").energy_mj

    def nvmlDeviceGetViolationStatus(self, h: Any, policy: int) -> SimpleNamespace:
        """Time (ns) the clocks were held back by a power (0) or thermal (1) policy."""
        gpu = self._gpu(h, "nvmlDeviceGetViolationStatus")
        return SimpleNamespace(referenceTime=0, violationTime=gpu.violation_ns.get(policy, 0))

    def nvmlDeviceGetCurrentClocksEventReasons(self, h: Any) -> int:
        """Bit mask of why the clocks are held down (newer NVML name)."""
        return self._gpu(h, "nvmlDeviceGetCurrentClocksEventReasons").reasons

    def nvmlDeviceGetCurrentClocksThrottleReasons(self, h: Any) -> int:
        """The same bit mask under the name older NVML releases use."""
        return self._gpu(h, "nvmlDeviceGetCurrentClocksThrottleReasons").reasons

    def nvmlDeviceGetComputeRunningProcesses(self, h: Any) -> list[SimpleNamespace]:
        """Compute processes on the GPU with their memory (`pid`, `usedGpuMemory`)."""
        gpu = self._gpu(h, "nvmlDeviceGetComputeRunningProcesses")
        with self.lock:
            return [SimpleNamespace(pid=p, usedGpuMemory=m) for p, m in gpu.processes.items()]

    def nvmlDeviceGetProcessUtilization(self, h: Any, since_us: int) -> list[SimpleNamespace]:
        """Per-process utilization samples newer than `since_us`; NOT_FOUND when there are none
        (as the driver answers when no process used the GPU since)."""
        gpu = self._gpu(h, "nvmlDeviceGetProcessUtilization")
        with self.lock:
            if not gpu.proc_util:
                raise NVMLError(codes.NOT_FOUND)
            now = max(int(time.time() * 1e6), since_us + 1)
            got = [
                SimpleNamespace(
                    pid=p, timeStamp=u[2] if len(u) > 2 else now, smUtil=u[0], memUtil=u[1]
                )
                for p, u in gpu.proc_util.items()
            ]
            got = [s for s in got if s.timeStamp >= since_us]
            if not got:
                raise NVMLError(codes.NOT_FOUND)
            return got

    def nvmlDeviceGetGraphicsRunningProcesses(self, h: Any) -> list[SimpleNamespace]:
        """Graphics processes on the GPU with their memory (`pid`, `usedGpuMemory`)."""
        gpu = self._gpu(h, "nvmlDeviceGetGraphicsRunningProcesses")
        with self.lock:
            return [SimpleNamespace(pid=p, usedGpuMemory=m) for p, m in gpu.graphics.items()]

    def nvmlDeviceGetMigMode(self, h: Any) -> tuple[int, int]:
        """(current, pending) MIG mode; NOT_SUPPORTED on a GPU without MIG."""
        gpu = self._gpu(h, "nvmlDeviceGetMigMode")
        if gpu.mig is None:
            raise NVMLError(codes.NOT_SUPPORTED)
        return gpu.mig

    def nvmlDeviceGetMaxMigDeviceCount(self, h: Any) -> int:
        """How many MIG slices the GPU can hold (0 without MIG)."""
        return 7 if self._gpu(h, "nvmlDeviceGetMaxMigDeviceCount").mig else 0

    def nvmlDeviceGetMigDeviceHandleByIndex(self, h: Any, slot: int) -> tuple[FakeGpu, int]:
        """The handle of MIG slice `slot`, or NOT_FOUND past the last one."""
        gpu = self._gpu(h, "nvmlDeviceGetMigDeviceHandleByIndex")
        if slot >= len(gpu.mig_slots):
            raise NVMLError(codes.NOT_FOUND)
        return (gpu, slot)

    def nvmlDeviceGetPciInfo(self, h: Any) -> SimpleNamespace:
        """The GPU's PCI location (`busId`)."""
        return SimpleNamespace(busId=self._gpu(h, "nvmlDeviceGetPciInfo").bus_id)

    def _link(self, h: Any, fn: str, link: int) -> tuple[FakeGpu, tuple[str, int]]:
        gpu = self._gpu(h, fn)
        if not gpu.nvlinks:
            raise NVMLError(codes.NOT_SUPPORTED)
        if not 0 <= link < len(gpu.nvlinks):
            raise NVMLError(INVALID_ARGUMENT)
        return gpu, gpu.nvlinks[link]

    def nvmlDeviceGetNvLinkState(self, h: Any, link: int) -> int:
        """1 when NVLink `link` is up (every fake link is)."""
        self._link(h, "nvmlDeviceGetNvLinkState", link)
        return 1

    def nvmlDeviceGetNvLinkVersion(self, h: Any, link: int) -> int:
        """The link's nvmlNvlinkVersion_t."""
        return self._link(h, "nvmlDeviceGetNvLinkVersion", link)[0].nvlink_version

    def nvmlDeviceGetNvLinkRemotePciInfo(self, h: Any, link: int) -> SimpleNamespace:
        """The PCI location of what is at the link's other end."""
        return SimpleNamespace(busId=self._link(h, "nvmlDeviceGetNvLinkRemotePciInfo", link)[1][0])

    def nvmlDeviceGetNvLinkRemoteDeviceType(self, h: Any, link: int) -> int:
        """What is at the link's other end: 0 a GPU, 2 an NVSwitch."""
        return self._link(h, "nvmlDeviceGetNvLinkRemoteDeviceType", link)[1][1]

    def nvmlDeviceGetP2PStatus(self, h1: Any, h2: Any, caps: int) -> int:
        """0 (OK) when both GPUs reach an NVSwitch over NVLink, else 1 (not supported)."""
        a, b = self._gpu(h1, "nvmlDeviceGetP2PStatus"), self._gpu(h2, "nvmlDeviceGetP2PStatus")
        return 0 if a.nvlinks and b.nvlinks else 1

    def nvmlDeviceGetTopologyCommonAncestor(self, h1: Any, h2: Any) -> int:
        """The closest PCIe level the two GPUs share (nvmlGpuTopologyLevel_t)."""
        a = self._gpu(h1, "nvmlDeviceGetTopologyCommonAncestor")
        b = self._gpu(h2, "nvmlDeviceGetTopologyCommonAncestor")
        i, j = sorted((self.gpus.index(a), self.gpus.index(b)))
        return self.ancestors.get((i, j), 40 if a.numa == b.numa else 50)

    def nvmlDeviceGetNumaNodeId(self, h: Any) -> int:
        """The NUMA node nearest the GPU."""
        gpu = self._gpu(h, "nvmlDeviceGetNumaNodeId")
        if gpu.numa is None:
            raise NVMLError(codes.NOT_SUPPORTED)
        return gpu.numa

    def nvmlDeviceGetCpuAffinity(self, h: Any, words: int) -> list[int]:
        """The CPUs near the GPU as a bit mask in `words` 64-bit words."""
        first, last = self._gpu(h, "nvmlDeviceGetCpuAffinity").cpus
        mask = sum(1 << c for c in range(first, last + 1))
        return [(mask >> (64 * w)) & (2**64 - 1) for w in range(words)]

    def nvmlDeviceGetFieldValues(self, h: Any, ids: Any) -> list[SimpleNamespace]:
        """Field values; the NVLink throughput counters (KiB, scope: every link) answer."""
        gpu = self._gpu(h, "nvmlDeviceGetFieldValues")
        out = []
        for fid in ids:
            field_id = fid[0] if isinstance(fid, tuple) else fid
            ok = gpu.nvlinks and field_id in (138, 139)
            value = gpu.nvlink_kib[field_id - 138] if ok else 0
            out.append(
                SimpleNamespace(
                    fieldId=field_id,
                    timestamp=self.field_us,
                    nvmlReturn=0 if ok else codes.NOT_SUPPORTED,
                    value=SimpleNamespace(ullVal=value),
                )
            )
        return out


def worker_inventory(fake: FakeNvml, *, l2: bool = True) -> dict[str, Any]:
    """A handshake `inventory` dict as the worker would send it for this fake's GPUs."""
    sms = {(9, 0): 132, (8, 0): 108, (7, 5): 40, (8, 9): 142}
    l2_sizes = {(9, 0): 50 * MiB, (8, 0): 40 * MiB, (7, 5): 4 * MiB, (8, 9): 96 * MiB}
    devices = []
    for i, g in enumerate(fake.gpus):
        d = {
            "index": i,
            "name": g.name,
            "kind": "cuda",
            # CUDA's figure (torch's total_memory): the card's total less the driver's reserve
            "memory_total": g.total - g.reserved,
            "compute_capability": f"{g.cc[0]}.{g.cc[1]}",
            "multiprocessors": sms.get(g.cc, 80),
            "uuid": g.uuid[4:],  # torch prints the UUID without NVML's "GPU-" prefix
        }
        if l2:
            d["l2_cache_size"] = l2_sizes.get(g.cc, 0)
        devices.append(d)
    return {
        "devices": devices,
        "versions": {
            "python": "3.12.3",
            "torch": "2.9.0+cu130",
            "torch_cuda_runtime": "13.0",
            "cupy": "13.6.0",
            "cupy_cuda_runtime": "13.0",
            "nvidia-ml-py": "13.580.82",
        },
        "driver_version": fake.driver,
        "gpu_reason": "",
    }


def fake_sampler(
    variant: str = "full", interval: float = 0.5, *, manual: bool = False
) -> tuple[Any, FakeNvml]:
    """(Sampler, fake): a sampler reading the fake through the real telemetry code."""
    fake = FakeNvml(variant)
    reader = TelemetryReader(fake, procs=fake.procs)
    return Sampler(reader, interval=interval, manual=manual), fake
