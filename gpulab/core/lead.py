"""A spin kernel queued ahead of a timed call's start event (`Timer.measure(lead=...)`).

A lone call timed with CUDA events on an idle GPU bills the host's launch latency to the
kernel: the start event fires as soon as it reaches the GPU, and the kernel starts only once the
host has got through Python, the library's dispatch and the driver. That is 5 to 10% of a 100 us
kernel on a quiet host, and on the H100 we measured it, the host was not always quiet: for
stretches of a second every call of a check came 40 to 60 us later, and a kernel at 0.93 of the
copy ceiling read 0.55 to 0.78 (bench/results/check-noise-h100.json). With a spin of LEAD_US
queued first, the GPU is still busy while the host launches, so the events bracket the device's
time for the work; a call that launches several kernels still pays any gap between them.

A fixed spin is not enough where a call's host side is long. A graded call runs inside the
check's watch (torch's modes, the thread guard), and a Triton launch through it took about
400 us of host time on an H200, twice LEAD_US: triton-causal-softmax's reference graded 0.33 to
0.53 of itself, its kernel starting 100 to 300 us after the spin ended while the yardstick's,
with the GPU still busy from its prepare, started 2.5 us after (bench/results/
triton-lead-h200.json). So a Spin can `cover` a host time the grader measured here, now, on
the yardstick's own calls: each side's launch is hidden alike, and the learner's host time
beyond the yardstick's still shows.

Import-light: torch and CuPy are imported when a spin is asked for, by the process that times.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

LEAD_US = 200.0  # far above a quiet launch (10-30 us); 3 ms of spinning over a check's 15 calls
COVER = 1.5  # a covered host time's margin: a launch's host time varies from call to call
LEAD_MAX_US = 5000.0  # a host time past this is the call's own cost, not a launch's
ASSUMED_MHZ = 2000.0  # the spin counts SM cycles: at a lower clock it only lasts longer
_SPIN = r"""
extern "C" __global__ void gpulab_lead(long long cycles) {
    long long start = clock64();
    while (clock64() - start < cycles) { }
}
"""
_kernels: dict[int, Any] = {}  # device index -> CuPy RawKernel


class Spin:
    """A callable that queues `us` microseconds of spinning (see `spin`)."""

    def __init__(self, queue: Callable[[int], Any], us: float = LEAD_US) -> None:
        self._queue = queue
        self.base_us = self.us = float(us)
        self._ties: list[Spin] = []

    def __call__(self) -> None:
        self._queue(int(self.us * ASSUMED_MHZ))

    def cover(self, host_s: float) -> None:
        """Spin long enough to hide a call whose host side takes `host_s` seconds, never less
        than the spin asked for, nor more than LEAD_MAX_US; a tied spin grows alike."""
        self.us = min(LEAD_MAX_US, max(self.us, self.base_us, COVER * host_s * 1e6))
        for other in self._ties:
            other.us = max(other.us, self.us)

    def tie(self, other: Spin) -> None:
        """Keep `other` (the spin ahead of the untimed calls) as long as this one: a call that
        timed how long the GPU stayed busy before it could tell a timed call from a checked
        one by the length of the spin."""
        self.us = max(self.us, other.us)
        other.us = self.us
        self._ties.append(other)


def spin(sync: str, device_index: int = 0, us: float = LEAD_US) -> Spin | None:
    """A Spin that queues about `us` microseconds of spinning on the current stream of
    `sync`'s library ("cupy" or "torch"); None for "none" or where no spin can be queued."""
    if sync == "torch":
        import torch

        sleep = getattr(torch.cuda, "_sleep", None)
        if sleep is None or not torch.cuda.is_available():
            return None
        return Spin(sleep, us)
    if sync == "cupy":
        import cupy

        kernel = _kernels.get(device_index)
        if kernel is None:
            with cupy.cuda.Device(device_index):
                kernel = cupy.RawKernel(_SPIN, "gpulab_lead")
                kernel.compile()  # now, not inside the first timed sample
            _kernels[device_index] = kernel
        return Spin(lambda cycles: kernel((1,), (1,), (cupy.int64(cycles),)), us)
    return None
