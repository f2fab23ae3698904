"""What the bandwidth rows are read against on this machine, besides the calibration: the PCIe
link's theoretical rate (from NVML) and the CPU's last-level cache (from sysfs).

The link's datasheet figure is context only (no copy reaches it); the cache size decides which
host copies are cache figures rather than DRAM ones. Kept apart from the run: both are reads of
the machine's own description, with their own failure modes (no NVML, no sysfs).
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

from gpulab.experiments import result_rows

# PCIe transfer rate per lane (GT/s) and line-code efficiency, by generation.
PCIE_GTS = {1: 2.5, 2: 5.0, 3: 8.0, 4: 16.0, 5: 32.0, 6: 64.0}
PCIE_CODE = {1: 0.8, 2: 0.8, 3: 128 / 130, 4: 128 / 130, 5: 128 / 130, 6: 242 / 256}
DEFAULT_LLC_BYTES = 32 * 2**20  # when the OS does not say (sysfs missing)


def host_cache_bytes() -> int:
    """The CPU's largest cache (the last level), from sysfs; DEFAULT_LLC_BYTES when unknown."""
    best = 0
    for d in Path("/sys/devices/system/cpu/cpu0/cache").glob("index*"):
        try:
            text = (d / "size").read_text().strip().upper()
        except OSError:
            continue
        mult = {"K": 2**10, "M": 2**20, "G": 2**30}.get(text[-1:], 1)
        digits = text.rstrip("KMG")
        if digits.isdigit():
            best = max(best, int(digits) * mult)
    return best or DEFAULT_LLC_BYTES


def cache_resident_note(footprint: int, llc: int) -> str:
    """The note of a host copy that fits in the last-level cache ('' when it does not)."""
    if footprint > llc:
        return ""
    return (
        f"cache-resident: source + destination ({result_rows.size_label(footprint)}) fit in the CPU's "
        f"{result_rows.size_label(llc)} last-level cache, so this is a cache figure, not DRAM: no % of "
        "the DRAM copy ceiling"
    )


def pcie_gbs(gen: int, width: int) -> float | None:
    """Theoretical one-direction bandwidth of a PCIe link in GB/s (before protocol overhead)."""
    if gen not in PCIE_GTS or width <= 0:
        return None
    return PCIE_GTS[gen] * width * PCIE_CODE[gen] / 8


def pcie_link(inventory: Any, device_index: int) -> dict[str, Any]:
    """The GPU's PCIe link from NVML: max and current generation and width, or a reason."""
    try:
        import pynvml
    except ImportError:
        return {"reason": "the NVML binding is missing (pip install nvidia-ml-py)"}
    try:
        pynvml.nvmlInit()
    except Exception as exc:  # noqa: BLE001 - no NVML: the reason replaces the link's figures
        return {"reason": f"NVML unavailable: {exc}"}
    try:
        handle = None
        for d in inventory.devices:
            if d.kind == "cuda" and d.index == device_index and d.uuid:
                uuid = d.uuid if d.uuid.startswith("GPU-") else f"GPU-{d.uuid}"
                try:
                    handle = pynvml.nvmlDeviceGetHandleByUUID(uuid)
                except Exception:  # noqa: BLE001 - a UUID NVML does not know: no handle, said below
                    handle = None
        if handle is None:
            handle = pynvml.nvmlDeviceGetHandleByIndex(device_index)
        info: dict[str, Any] = {}
        for key, fn in (
            ("max_gen", pynvml.nvmlDeviceGetMaxPcieLinkGeneration),
            ("max_width", pynvml.nvmlDeviceGetMaxPcieLinkWidth),
            ("gen", pynvml.nvmlDeviceGetCurrPcieLinkGeneration),
            ("width", pynvml.nvmlDeviceGetCurrPcieLinkWidth),
        ):
            try:
                info[key] = int(fn(handle))
            except Exception as exc:  # noqa: BLE001 - a figure NVML cannot read: the reason says which
                info.setdefault("reason", f"NVML could not read the PCIe link ({exc})")
        return info
    except Exception as exc:  # noqa: BLE001 - any NVML error: the reason replaces the link's figures
        return {"reason": f"NVML could not read the PCIe link ({exc})"}
    finally:
        with contextlib.suppress(Exception):
            pynvml.nvmlShutdown()
