"""Memory fits: refuse a size before allocating, with one line that says what is free.

Every size check an experiment makes before it allocates on the GPU or the host. Nothing here
imports torch or CuPy at module level (the registry loads in the UI process).
"""

from __future__ import annotations

from gpulab.core.hostmem import host_available_bytes as available
from gpulab.experiments.base import Context, DoesNotFit

# Room for what the fit estimates do not count element by element: the verification blocks,
# cuBLAS / cuDNN workspaces and the allocators' rounding.
SLACK_BYTES = 512 * 2**20


HOST_SLACK_BYTES = 256 * 2**20


def free_device_memory(ctx: Context) -> tuple[int, int] | None:
    """(free, total) bytes on ctx's GPU, or None without one.

    Through torch when it has CUDA, else through CuPy (a CUDA machine with a CPU-only torch)."""
    if ctx.has_cuda:
        import torch

        free, total = torch.cuda.mem_get_info(ctx.device_index)
        return int(free), int(total)
    if ctx.has_cupy:
        import cupy

        with cupy.cuda.Device(ctx.device_index):
            free, total = cupy.cuda.runtime.memGetInfo()
        return int(free), int(total)
    return None


def fmt_bytes(nbytes: float) -> str:
    """A byte count as MiB or GiB, for messages."""
    if nbytes >= 2**30:
        return f"{nbytes / 2**30:.2f} GiB"
    return f"{nbytes / 2**20:.1f} MiB"


def require_fit(ctx: Context, nbytes: float, what: str, margin: float = 0.9) -> None:
    """Refuse (DoesNotFit) before allocating when `nbytes` would not fit on the GPU."""
    info = free_device_memory(ctx)
    if info is None:
        return
    free, _ = info
    if nbytes > margin * free:
        exc = DoesNotFit(
            f"{what} needs about {fmt_bytes(nbytes)} on the GPU but {fmt_bytes(free)} is free:"
            " choose a smaller size"
        )
        exc.extra = {"requested_bytes": int(nbytes), "free_bytes": int(free), "memory": "gpu"}
        raise exc


def host_available_bytes() -> int | None:
    """Host RAM a new allocation can take now without swapping, or None when unknown: RAM
    available lowered to the tightest limit of this process's own memory cgroup (a
    container's, a systemd slice's); see gpulab.core.hostmem."""
    return available()


def require_host_fit(nbytes: float, what: str, margin: float = 0.9) -> None:
    """Refuse (DoesNotFit, as for the GPU) before allocating when `nbytes` of host memory
    would not fit in the RAM available now; a size that would push the machine into swap or
    the OOM killer ends in one clear line instead of a bare "out of memory"."""
    avail = host_available_bytes()
    if avail is None:
        return
    if nbytes > margin * avail:
        exc = DoesNotFit(
            f"{what} needs about {fmt_bytes(nbytes)} of host memory (RAM) but "
            f"{fmt_bytes(avail)} is available: choose a smaller size"
        )
        exc.extra = {"requested_bytes": int(nbytes), "free_bytes": int(avail), "memory": "host"}
        raise exc
