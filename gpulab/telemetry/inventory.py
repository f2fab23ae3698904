"""Static facts per GPU, read once from NVML and joined with what the worker reports.

Where a figure comes from:
- NVML: name, UUID, compute capability, architecture, memory total, max SM and memory clocks,
  bus width, PCIe max generation and width, enforced power limit, MIG mode, driver versions.
- The worker (its handshake carries `core.devices.Inventory.to_dict()`): SM count and L2 size.
  NVML has no call for either on every driver, so we do not guess them from a table; until the
  worker is ready they read N/A (the worker reports it). The join is by UUID, since the CUDA
  order of devices (fastest first by default) need not match NVML's PCI order; by index only
  when there is one GPU and no UUID.

Theoretical memory bandwidth = 2 x max memory clock x bus width / 8. NVML reports the memory
clock such that the factor 2 (two transfers per clock) gives the datasheet figure for HBM and
GDDR alike: H100 SXM 2619 MHz x 2 x 5120 bit / 8 = 3.35 TB/s; A100 80GB 1593 MHz -> 2.04 TB/s;
RTX 4090 10501 MHz x 2 x 384 / 8 = 1.01 TB/s.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from typing import Any

from gpulab.telemetry.nvml import INSTALL_HINT, NvmlSession, binding_version, text
from gpulab.telemetry.topology import Topology, read_topology
from gpulab.telemetry.values import NA, jsonable

ARCH_BY_NVML = {
    2: "Kepler",
    3: "Maxwell",
    4: "Pascal",
    5: "Volta",
    6: "Turing",
    7: "Ampere",
    8: "Ada Lovelace",
    9: "Hopper",
    10: "Blackwell",
    13: "Rubin",
}
ARCH_BY_MAJOR = {3: "Kepler", 5: "Maxwell", 6: "Pascal", 7: "Volta", 8: "Ampere", 9: "Hopper"}
ARCH_BY_MAJOR.update({10: "Blackwell", 12: "Blackwell"})

# PCIe usable bytes/s per lane and direction, after line encoding (8b/10b, 128b/130b, FLIT).
PCIE_LANE_BYTES = {1: 0.25e9, 2: 0.5e9, 3: 0.985e9, 4: 1.969e9, 5: 3.938e9, 6: 7.563e9}

WORKER_PENDING = NA("the worker reports it; not ready yet")
WORKER_VERSION_KEYS = (
    "torch",
    "torch_cuda_runtime",
    "cupy",
    "cupy_cuda_runtime",
    "nvidia-ml-py",
    "numpy",
    "python",
)


def arch_name(cc: str, nvml_arch: Any = None) -> str | NA:
    """The architecture's name from NVML's code or the compute capability, or NA."""
    if isinstance(nvml_arch, int) and nvml_arch in ARCH_BY_NVML:
        return ARCH_BY_NVML[nvml_arch]
    if isinstance(cc, str) and cc:
        major, _, minor = cc.partition(".")
        if major == "7" and minor == "5":
            return "Turing"
        if major == "8" and minor == "9":
            return "Ada Lovelace"
        if major.isdigit() and int(major) in ARCH_BY_MAJOR:
            return ARCH_BY_MAJOR[int(major)]
    return NA("unknown architecture")


def norm_uuid(uuid: Any) -> str:
    """A GPU UUID lower-cased without its GPU-/MIG- prefix."""
    s = str(uuid or "").strip().lower()
    for prefix in ("gpu-", "mig-"):
        if s.startswith(prefix):
            s = s[len(prefix) :]
    return s


@dataclass
class GpuInventory:
    """One GPU's fixed facts from NVML: name, UUID, SMs, memory, clocks, PCIe and power limit."""

    nvml_index: int
    cuda_index: int | NA = WORKER_PENDING
    name: str | NA = NA("not read")
    uuid: str | NA = NA("not read")
    compute_capability: str | NA = NA("not read")
    architecture: str | NA = NA("not read")
    sm_count: int | NA = WORKER_PENDING
    l2_cache: int | NA = WORKER_PENDING
    memory_total: int | NA = NA("not read")
    cuda_memory_total: int | NA = WORKER_PENDING  # CUDA's figure: the total less the reserve
    max_sm_clock_mhz: int | NA = NA("not read")
    max_mem_clock_mhz: int | NA = NA("not read")
    bus_width_bits: int | NA = NA("not read")
    memory_bandwidth: float | NA = NA("not read")  # bytes/s, theoretical
    pcie_max_gen: int | NA = NA("not read")
    pcie_max_width: int | NA = NA("not read")
    pcie_bandwidth: float | NA = NA("not read")  # bytes/s per direction, theoretical
    power_limit_w: float | NA = NA("not read")
    mig_mode: str | NA = NA("not read")
    mig_instances: list[dict[str, Any]] | NA = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """The GPU's facts as JSON-ready data."""
        return {f.name: jsonable(getattr(self, f.name)) for f in fields(self)}


@dataclass
class SystemInventory:
    """NVML's view of the machine: driver, versions and each GPU, or why there is none."""

    available: bool
    reason: str = ""  # why there is no NVML, and what to install
    driver_version: str | NA = NA("not read")
    cuda_driver_version: str | NA = NA("not read")
    nvml_version: str | NA = NA("not read")
    binding_version: str = ""
    gpus: list[GpuInventory] = field(default_factory=list)
    worker_versions: dict[str, str] = field(default_factory=dict)
    worker_gpu_reason: str = ""
    topology: Topology = field(default_factory=Topology)  # how the GPUs are linked

    def to_dict(self) -> dict[str, Any]:
        """The inventory as JSON-ready data."""
        return {f.name: jsonable(getattr(self, f.name)) for f in fields(self)}

    def gpu(self, nvml_index: int) -> GpuInventory | None:
        """The GPU with NVML index `nvml_index`, or None."""
        for g in self.gpus:
            if g.nvml_index == nvml_index:
                return g
        return None

    def with_worker(self, worker: dict[str, Any] | None) -> SystemInventory:
        """A copy joined with the worker's `Inventory.to_dict()` (pure: no NVML calls)."""
        if not worker:
            return self
        versions = {k: str(v) for k, v in (worker.get("versions") or {}).items() if v}
        devices = [d for d in worker.get("devices") or [] if d.get("kind", "cuda") == "cuda"]
        by_uuid = {norm_uuid(d.get("uuid")): d for d in devices if d.get("uuid")}
        gpus = []
        for g in self.gpus:
            match = by_uuid.get(norm_uuid(g.uuid)) if not isinstance(g.uuid, NA) else None
            if match is None and len(self.gpus) == 1 and len(devices) == 1:
                match = devices[0]
            gpus.append(_joined(g, match, bool(devices), worker.get("gpu_reason", "")))
        return replace(
            self,
            gpus=gpus,
            worker_versions={k: versions[k] for k in WORKER_VERSION_KEYS if k in versions},
            worker_gpu_reason=str(worker.get("gpu_reason") or ""),
        )


def _joined(g: GpuInventory, d: dict[str, Any] | None, any_devices: bool, why: str) -> GpuInventory:
    if d is None:
        gone = NA(
            "the worker does not see this GPU (CUDA_VISIBLE_DEVICES?)"
            if any_devices
            else f"the worker has no CUDA device: {why or 'CPU mode'}"
        )
        return replace(g, cuda_index=gone, sm_count=gone, l2_cache=gone, cuda_memory_total=gone)
    sms = int(d.get("multiprocessors") or 0)
    l2 = int(d.get("l2_cache_size") or 0)
    cuda_total = int(d.get("memory_total") or 0)
    return replace(
        g,
        cuda_index=int(d.get("index", 0)),
        cuda_memory_total=cuda_total if cuda_total else NA("the worker did not report it"),
        sm_count=sms if sms else NA("the worker did not report it"),
        l2_cache=l2 if l2 else NA("NVML has no L2 query and this worker does not report it"),
    )


def read_inventory(session: NvmlSession, worker: dict[str, Any] | None = None) -> SystemInventory:
    """Everything static NVML knows; never raises. Without NVML: `available` False and why."""
    if not session.open():
        why = session.error.reason if session.error is not None else "NVML is not available"
        return SystemInventory(
            available=False,
            driver_version=NA(why),
            cuda_driver_version=NA(why),
            nvml_version=NA(why),
            reason=(
                f"CPU mode: {why}. Experiments run on the CPU (numpy, torch-cpu). "
                f"For a GPU: {INSTALL_HINT}."
            ),
            binding_version=binding_version(),
        ).with_worker(worker)
    inv = SystemInventory(available=True, binding_version=binding_version())
    drv = session.system("nvmlSystemGetDriverVersion")
    inv.driver_version = drv if isinstance(drv, NA) else text(drv)
    cuda = session.system("nvmlSystemGetCudaDriverVersion_v2")
    inv.cuda_driver_version = (
        cuda if isinstance(cuda, NA) else f"{cuda // 1000}.{cuda % 1000 // 10}"
    )
    ver = session.system("nvmlSystemGetNVMLVersion")
    inv.nvml_version = ver if isinstance(ver, NA) else text(ver)
    count = session.count()
    if isinstance(count, NA):
        inv.available = False
        inv.reason = f"NVML loaded but cannot count GPUs: {count.reason}"
        return inv.with_worker(worker)
    if count == 0:
        inv.reason = "NVML sees no NVIDIA GPU on this machine"
    inv.gpus = [read_gpu(session, i) for i in range(count)]
    inv.topology = read_topology(session, count)
    return inv.with_worker(worker)


def read_gpu(session: NvmlSession, i: int) -> GpuInventory:
    """GPU `i`'s fixed facts; each one NVML cannot give is NA with why."""
    g = GpuInventory(nvml_index=i)
    handle = session.handle(i)
    lost = session.lost(i) or (handle if isinstance(handle, NA) else None)
    if lost is not None:
        return _unreadable(i, lost)
    name = session.call(i, "nvmlDeviceGetName")
    g.name = name if isinstance(name, NA) else text(name)
    uuid = session.call(i, "nvmlDeviceGetUUID")
    g.uuid = uuid if isinstance(uuid, NA) else text(uuid)
    cc = session.call(i, "nvmlDeviceGetCudaComputeCapability")
    cc_text = "" if isinstance(cc, NA) else f"{cc[0]}.{cc[1]}"
    g.compute_capability = cc if isinstance(cc, NA) else cc_text
    g.architecture = arch_name(
        cc_text,
        session.call(i, "nvmlDeviceGetArchitecture"),
    )
    mem = session.call(i, "nvmlDeviceGetMemoryInfo")
    g.memory_total = mem if isinstance(mem, NA) else int(mem.total)
    g.max_sm_clock_mhz = session.call(i, "nvmlDeviceGetMaxClockInfo", _const(session, "SM", 1))
    g.max_mem_clock_mhz = session.call(i, "nvmlDeviceGetMaxClockInfo", _const(session, "MEM", 2))
    g.bus_width_bits = session.call(i, "nvmlDeviceGetMemoryBusWidth")
    if isinstance(g.max_mem_clock_mhz, NA) or isinstance(g.bus_width_bits, NA):
        g.memory_bandwidth = NA("needs the memory clock and the bus width")
    else:
        g.memory_bandwidth = 2 * g.max_mem_clock_mhz * 1e6 * g.bus_width_bits / 8
    g.pcie_max_gen = session.call(i, "nvmlDeviceGetMaxPcieLinkGeneration")
    g.pcie_max_width = session.call(i, "nvmlDeviceGetMaxPcieLinkWidth")
    if isinstance(g.pcie_max_gen, NA) or isinstance(g.pcie_max_width, NA):
        g.pcie_bandwidth = NA("needs the PCIe generation and width")
    elif g.pcie_max_gen in PCIE_LANE_BYTES:
        g.pcie_bandwidth = PCIE_LANE_BYTES[g.pcie_max_gen] * g.pcie_max_width
    else:
        g.pcie_bandwidth = NA(f"unknown PCIe generation {g.pcie_max_gen}")
    limit = session.call(i, "nvmlDeviceGetEnforcedPowerLimit")
    g.power_limit_w = limit if isinstance(limit, NA) else limit / 1000.0
    g.mig_mode, g.mig_instances = _mig(session, i)
    lost = session.lost(i)
    return g if lost is None else _unreadable(i, lost)


def _unreadable(i: int, why: NA) -> GpuInventory:
    """A GPU we hold a slot for but cannot read (lost): every field says why."""
    return GpuInventory(
        **{f.name: why for f in fields(GpuInventory) if f.name != "nvml_index"}, nvml_index=i
    )


def _const(session: NvmlSession, clock: str, default: int) -> int:
    return int(getattr(session.nvml, f"NVML_CLOCK_{clock}", default))


def _mig(session: NvmlSession, i: int) -> tuple[str | NA, list[dict[str, Any]] | NA]:
    mode = session.call(i, "nvmlDeviceGetMigMode")
    if isinstance(mode, NA):
        if "not supported" in mode.reason:
            return NA("this GPU has no MIG"), NA("this GPU has no MIG")
        return mode, mode
    current, pending = int(mode[0]), int(mode[1])
    session.mig[i] = current == 1
    label = "on" if current == 1 else "off"
    if pending != current:
        label += f" (pending {'on' if pending == 1 else 'off'} after a reset)"
    if current != 1:
        return label, []
    instances: list[dict[str, Any]] = []
    slots = session.call(i, "nvmlDeviceGetMaxMigDeviceCount")
    for j in range(0 if isinstance(slots, NA) else int(slots)):
        h = session.call(i, "nvmlDeviceGetMigDeviceHandleByIndex", j)
        if isinstance(h, NA):
            continue  # an empty slot answers NotFound
        uuid = session.system("nvmlDeviceGetUUID", h)
        mem = session.system("nvmlDeviceGetMemoryInfo", h)
        instances.append(
            {
                "slot": j,
                "uuid": uuid if isinstance(uuid, NA) else text(uuid),
                "memory_total": mem if isinstance(mem, NA) else int(mem.total),
                "memory_used": mem if isinstance(mem, NA) else int(mem.used),
            }
        )
    return label, instances
