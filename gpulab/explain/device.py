"""The GPU's own answers, through CuPy: the kernel's attributes and the driver's occupancy.

Used by explain(gpu=True) in a process that may import CuPy (the worker, or the CLI with
`--gpu`), and by tests/test_explain_gpu.py to check the pure calculator against the driver.
CuPy compiles with its own NVRTC and options, so its register count can differ from ours by a
few; its figures are the ones the learner's kernel ran with.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

_KERNELS: dict[tuple[str, str, tuple[str, ...]], Any] = {}


@dataclass
class GpuInfo:
    """The GPU explain measures on: name, SMs, arch and per-SM limits."""

    name: str
    sms: int
    arch: str  # sm_90
    max_threads_per_sm: int
    max_blocks_per_sm: int
    regs_per_sm: int
    smem_per_sm: int
    smem_per_block_optin: int
    reserved_smem_per_block: int


def probe(index: int | None = None) -> GpuInfo:
    """The GpuInfo of CUDA device `index` (the current one by default), read through CuPy."""
    import cupy as cp  # deferred: a heavy dependency, and only for --gpu

    dev = cp.cuda.Device(index) if index is not None else cp.cuda.Device()
    attrs = dev.attributes
    props = cp.cuda.runtime.getDeviceProperties(dev.id)
    name = props.get("name", b"GPU")
    return GpuInfo(
        name=name.decode() if isinstance(name, bytes) else str(name),
        sms=int(attrs["MultiProcessorCount"]),
        arch=f"sm_{dev.compute_capability}",
        max_threads_per_sm=int(attrs.get("MaxThreadsPerMultiProcessor", 2048)),
        max_blocks_per_sm=int(attrs.get("MaxBlocksPerMultiprocessor", 32)),
        regs_per_sm=int(attrs.get("MaxRegistersPerMultiprocessor", 65536)),
        smem_per_sm=int(attrs.get("MaxSharedMemoryPerMultiprocessor", 0)),
        smem_per_block_optin=int(attrs.get("MaxSharedMemoryPerBlockOptin", 0)),
        reserved_smem_per_block=int(props.get("reservedSharedMemPerBlock", 1024)),
    )


def kernel(code: str, name: str, options: tuple[str, ...] = ()) -> Any:
    """A CuPy RawKernel for `code`, compiled once per process."""
    import cupy as cp  # deferred: a heavy dependency, and only for --gpu

    key = (code, name, tuple(options))
    if key not in _KERNELS:
        _KERNELS[key] = cp.RawKernel(code, name, options=tuple(options))
    return _KERNELS[key]


def attributes(code: str, name: str, options: tuple[str, ...] = ()) -> dict[str, int] | None:
    """CuPy's `RawKernel.attributes` (num_regs, shared_size_bytes, local_size_bytes,
    max_threads_per_block, ...), or None when it will not compile or load here."""
    try:
        return {k: int(v) for k, v in kernel(code, name, options).attributes.items()}
    except Exception:  # noqa: BLE001 - a kernel CuPy cannot load: the NVRTC figures stand
        return None


def occupancy(
    code: str, name: str, options: tuple[str, ...], block: int, shared_dynamic: int = 0
) -> int | None:
    """Blocks per SM from cuOccupancyMaxActiveBlocksPerMultiprocessor, or None."""
    import cupy as cp  # deferred: a heavy dependency, and only for --gpu

    try:
        k = kernel(code, name, options)
        fn = k.kernel if hasattr(k, "kernel") else k
        return int(
            cp.cuda.driver.occupancyMaxActiveBlocksPerMultiprocessor(
                fn.ptr, int(block), int(shared_dynamic)
            )
        )
    except Exception:  # noqa: BLE001 - an older CuPy without the call: the computed figure stands
        return None
