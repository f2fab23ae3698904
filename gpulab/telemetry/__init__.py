"""NVML inventory and snapshots, sampled off the event loop. Headless: no textual here.

    from gpulab.telemetry import Sampler, shared_sampler
    unsubscribe = shared_sampler().subscribe(on_frame)   # on_frame(Frame) runs on the thread

Every reading is a value or an `NA(reason)`; see values.py. Tests inject the fake NVML,
`gpulab.testing.fake_nvml`.
"""

from gpulab.telemetry.inventory import GpuInventory, SystemInventory, read_inventory
from gpulab.telemetry.nvml import NvmlSession
from gpulab.telemetry.sampler import Frame, Sampler, TelemetryReader, shared_sampler
from gpulab.telemetry.snapshot import GpuSnapshot, ProcessInfo, read_snapshot
from gpulab.telemetry.values import NA, fmt, is_na

__all__ = [
    "NA",
    "Frame",
    "GpuInventory",
    "GpuSnapshot",
    "NvmlSession",
    "ProcessInfo",
    "Sampler",
    "SystemInventory",
    "TelemetryReader",
    "fmt",
    "is_na",
    "read_inventory",
    "read_snapshot",
    "shared_sampler",
]
