"""Which compute backends exist here, on which devices, and why one is missing.

`detect()` imports torch and CuPy, which takes seconds: call it in the worker or a headless
command, never in the UI process (the worker's handshake carries its result to the UI).
"""

from __future__ import annotations

import contextlib
import os
import platform
from dataclasses import asdict, dataclass, field
from importlib import metadata
from typing import Any

from gpulab.emulator import toolchain

CUPY_HINT = "pip install 'gpulab[cuda12]' (CUDA 12 driver) or 'gpulab[cuda13]' (CUDA 13 driver)"


# The CUDA emulator (gpulab.emulator) as a backend: it runs the CUDA C exercises where CuPy cannot.
EMULATOR = "emulator"


@dataclass
class Backend:
    """One compute backend (numpy, torch-cpu, torch-cuda, cupy, emulator): whether it can
    run here, and why not."""

    name: str  # numpy, torch-cpu, torch-cuda, cupy, emulator
    available: bool
    version: str = ""
    reason: str = ""  # why unavailable, in one line a learner can act on


@dataclass
class DeviceInfo:
    """One device the backends can use: its index, name, kind (cuda or cpu) and memory."""

    index: int
    name: str
    kind: str  # "cuda" or "cpu"
    memory_total: int = 0
    compute_capability: str = ""
    multiprocessors: int = 0
    uuid: str = ""
    l2_cache_size: int = 0  # bytes; NVML has no call for it, so the worker reports it


@dataclass
class Inventory:
    """What this machine offers: backends, devices, library versions and the CPU."""

    backends: dict[str, Backend] = field(default_factory=dict)
    devices: list[DeviceInfo] = field(default_factory=list)
    versions: dict[str, str] = field(default_factory=dict)
    cpu: str = ""
    cpu_count: int = 0
    driver_version: str = ""
    driver_cuda: str = ""
    gpu_reason: str = ""  # empty when a GPU is usable

    @property
    def has_gpu(self) -> bool:
        """True when torch-cuda or CuPy can use a GPU here."""
        b = self.backends.get("torch-cuda")
        c = self.backends.get("cupy")
        return bool((b and b.available) or (c and c.available))

    def available(self, name: str) -> bool:
        """True when the backend `name` can run here."""
        b = self.backends.get(name)
        return bool(b and b.available)

    def reason(self, name: str) -> str:
        """Why the backend `name` cannot run here, in one line (empty when it can)."""
        b = self.backends.get(name)
        return b.reason if b else f"{name}: unknown backend"

    def label(self) -> str:
        """One line for a header: the GPU, or CPU mode and why."""
        gpus = [d for d in self.devices if d.kind == "cuda"]
        if gpus:
            more = f" (+{len(gpus) - 1} more)" if len(gpus) > 1 else ""
            return f"{gpus[0].name}{more}"
        return f"CPU mode: {self.gpu_reason or 'no GPU'}"

    def to_dict(self) -> dict[str, Any]:
        """The inventory as plain JSON-ready data."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Inventory:
        """The inventory that `to_dict` wrote."""
        return cls(
            backends={k: Backend(**v) for k, v in data.get("backends", {}).items()},
            devices=[DeviceInfo(**d) for d in data.get("devices", [])],
            versions=dict(data.get("versions", {})),
            cpu=data.get("cpu", ""),
            cpu_count=data.get("cpu_count", 0),
            driver_version=data.get("driver_version", ""),
            driver_cuda=data.get("driver_cuda", ""),
            gpu_reason=data.get("gpu_reason", ""),
        )


def _pkg_version(name: str) -> str:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return ""


def _driver() -> tuple[str, str, str]:
    """(driver version, CUDA version the driver supports, error) from NVML."""
    try:
        import pynvml
    except ImportError:
        return "", "", "the NVML binding is missing (pip install nvidia-ml-py)"
    try:
        pynvml.nvmlInit()
    except Exception as exc:  # noqa: BLE001 - NVMLError_LibraryNotFound, DriverNotLoaded, ...: no driver, said why
        return "", "", f"no NVIDIA driver found ({exc})"
    try:
        drv = pynvml.nvmlSystemGetDriverVersion()
        drv = drv.decode() if isinstance(drv, bytes) else str(drv)
        cuda = pynvml.nvmlSystemGetCudaDriverVersion_v2()
        return drv, f"{cuda // 1000}.{cuda % 1000 // 10}", ""
    except Exception as exc:  # noqa: BLE001 - any NVML error reading the driver becomes the reason shown
        return "", "", f"NVML could not read the driver ({exc})"
    finally:
        with contextlib.suppress(Exception):
            pynvml.nvmlShutdown()


def _version_tuple(text: str) -> tuple[int, ...]:
    out = []
    for part in text.split(".")[:2]:
        digits = "".join(ch for ch in part if ch.isdigit())
        out.append(int(digits or 0))
    return tuple(out)


def _cuda_hidden() -> bool:
    value = os.environ.get("CUDA_VISIBLE_DEVICES")
    return value is not None and value.strip() in ("", "-1", "none", "NoDevFiles")


def cupy_hint(driver_cuda: str = "") -> str:
    """The pip command that installs the CuPy build for the driver's CUDA major version."""
    if driver_cuda.startswith("13"):
        return "pip install 'gpulab[cuda13]' (cupy-cuda13x)"
    if driver_cuda.startswith("12"):
        return "pip install 'gpulab[cuda12]' (cupy-cuda12x)"
    return CUPY_HINT


def detect() -> Inventory:
    """Probe this process for NumPy, torch, CuPy and their devices; never raises for a missing
    one."""
    import numpy

    inv = Inventory(cpu=platform.processor() or platform.machine(), cpu_count=os.cpu_count() or 1)
    inv.versions["python"] = platform.python_version()
    inv.versions["numpy"] = numpy.__version__
    inv.versions["nvidia-ml-py"] = _pkg_version("nvidia-ml-py")
    inv.backends["numpy"] = Backend("numpy", True, numpy.__version__)
    inv.driver_version, inv.driver_cuda, driver_error = _driver()
    if inv.driver_version:
        inv.versions["driver"] = inv.driver_version
        inv.versions["driver_cuda"] = inv.driver_cuda
    _detect_torch(inv, driver_error)
    _detect_cupy(inv, driver_error)
    inv.backends[EMULATOR] = emulator_backend()
    if not inv.has_gpu:
        inv.gpu_reason = (
            "CUDA_VISIBLE_DEVICES hides every GPU"
            if _cuda_hidden()
            else driver_error or inv.reason("torch-cuda") or inv.reason("cupy") or "no usable GPU"
        )
    return inv


def emulator_backend() -> Backend:
    """The CUDA emulator: available where there is a host C++ compiler to build kernels with."""
    cxx = toolchain.compiler()
    return Backend(EMULATOR, cxx is not None, cxx or "", reason=toolchain.missing())


def _detect_torch(inv: Inventory, driver_error: str) -> None:
    try:
        import torch
    except ImportError as exc:
        why = f"torch is not installed ({exc}); pip install torch"
        inv.backends["torch-cpu"] = Backend("torch-cpu", False, reason=why)
        inv.backends["torch-cuda"] = Backend("torch-cuda", False, reason=why)
        return
    version = torch.__version__
    inv.versions["torch"] = version
    inv.versions["torch_cuda_runtime"] = torch.version.cuda or ""
    inv.backends["torch-cpu"] = Backend("torch-cpu", True, version)
    cuda = Backend("torch-cuda", False, version)
    if torch.version.cuda is None:
        cuda.reason = f"this torch ({version}) is a CPU-only build; install a CUDA build of torch"
    elif _cuda_hidden():
        cuda.reason = "CUDA_VISIBLE_DEVICES hides every GPU"
    elif driver_error:
        cuda.reason = driver_error
    elif inv.driver_cuda and _version_tuple(inv.driver_cuda) < _version_tuple(torch.version.cuda):
        cuda.reason = (
            f"the driver {inv.driver_version} supports CUDA {inv.driver_cuda}, older than the "
            f"CUDA {torch.version.cuda} runtime this torch needs: update the driver"
        )
        # Minor-version compatibility can still let it run; trust torch if it says yes.
        cuda.available = torch.cuda.is_available()
    else:
        cuda.available = torch.cuda.is_available()
        if not cuda.available:
            cuda.reason = "torch.cuda.is_available() is False (no device visible to CUDA)"
    if cuda.available:
        cuda.reason = ""
        for i in range(torch.cuda.device_count()):
            p = torch.cuda.get_device_properties(i)
            inv.devices.append(
                DeviceInfo(
                    index=i,
                    name=p.name,
                    kind="cuda",
                    memory_total=int(p.total_memory),
                    compute_capability=f"{p.major}.{p.minor}",
                    multiprocessors=int(p.multi_processor_count),
                    uuid=str(getattr(p, "uuid", "")),
                    l2_cache_size=int(getattr(p, "L2_cache_size", 0) or 0),
                )
            )
    inv.backends["torch-cuda"] = cuda


def _detect_cupy(inv: Inventory, driver_error: str) -> None:
    try:
        import cupy
    except ImportError:
        inv.backends["cupy"] = Backend(
            "cupy", False, reason=f"CuPy is not installed: {cupy_hint(inv.driver_cuda)}"
        )
        return
    except Exception as exc:  # noqa: BLE001 - a broken CuPy install raises other errors at import
        inv.backends["cupy"] = Backend("cupy", False, reason=f"CuPy failed to import: {exc}")
        return
    inv.versions["cupy"] = cupy.__version__
    backend = Backend("cupy", False, cupy.__version__)
    try:
        count = cupy.cuda.runtime.getDeviceCount()
        rt = cupy.cuda.runtime.runtimeGetVersion()
        inv.versions["cupy_cuda_runtime"] = f"{rt // 1000}.{rt % 1000 // 10}"
        backend.available = count > 0
        backend.reason = "" if count else "CuPy sees no CUDA device"
    except Exception as exc:  # noqa: BLE001 - CuPy's CUDA errors vary by version; each becomes the reason shown
        backend.reason = driver_error or f"CuPy cannot use CUDA: {exc}"
    inv.backends["cupy"] = backend
    if backend.available and not any(d.kind == "cuda" for d in inv.devices):
        for i in range(cupy.cuda.runtime.getDeviceCount()):
            p = cupy.cuda.runtime.getDeviceProperties(i)
            name = p["name"].decode() if isinstance(p["name"], bytes) else str(p["name"])
            inv.devices.append(
                DeviceInfo(
                    index=i,
                    name=name,
                    kind="cuda",
                    memory_total=int(p["totalGlobalMem"]),
                    compute_capability=f"{p['major']}.{p['minor']}",
                    multiprocessors=int(p["multiProcessorCount"]),
                    l2_cache_size=int(p.get("l2CacheSize", 0) or 0),
                )
            )
