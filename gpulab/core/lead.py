"""A spin kernel queued ahead of a timed call's start event (`Timer.measure(lead=...)`).

A lone call timed with CUDA events on an idle GPU bills the host's launch latency to the
kernel: the start event fires as soon as it reaches the GPU, and the kernel starts only once the
host has got through Python, the library's dispatch and the driver. That is 5 to 10% of a 100 us
kernel on a quiet host, and on the H100 we measured it, the host was not always quiet: for
stretches of a second every call of a check came 40 to 60 us later, and a kernel at 0.93 of the
copy ceiling read 0.55 to 0.78 (bench/results/check-noise-h100.json). With a spin of LEAD_US
queued first, the GPU is still busy while the host launches, so the events bracket the device's
time for the work; a call that launches several kernels still pays any gap between them.

Import-light: torch and CuPy are imported when a spin is asked for, by the process that times.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

LEAD_US = 200.0  # far above a quiet launch (10-30 us); 3 ms of spinning over a check's 15 calls
ASSUMED_MHZ = 2000.0  # the spin counts SM cycles: at a lower clock it only lasts longer
_SPIN = r"""
extern "C" __global__ void gpulab_lead(long long cycles) {
    long long start = clock64();
    while (clock64() - start < cycles) { }
}
"""
_kernels: dict[int, Any] = {}  # device index -> CuPy RawKernel


def spin(sync: str, device_index: int = 0, us: float = LEAD_US) -> Callable[[], None] | None:
    """A callable that queues about `us` microseconds of spinning on the current stream of
    `sync`'s library ("cupy" or "torch"); None for "none" or where no spin can be queued."""
    cycles = int(us * ASSUMED_MHZ)
    if sync == "torch":
        import torch

        sleep = getattr(torch.cuda, "_sleep", None)
        if sleep is None or not torch.cuda.is_available():
            return None
        return lambda: sleep(cycles)
    if sync == "cupy":
        import cupy

        kernel = _kernels.get(device_index)
        if kernel is None:
            with cupy.cuda.Device(device_index):
                kernel = cupy.RawKernel(_SPIN, "gpulab_lead")
                kernel.compile()  # now, not inside the first timed sample
            _kernels[device_index] = kernel
        arg = cupy.int64(cycles)
        return lambda: kernel((1,), (1,), (arg,))
    return None
