"""Exercise: measure host-to-device bandwidth from pageable and from pinned memory."""

from __future__ import annotations

import time  # noqa: F401  (you will need a clock)


def measure_h2d(nbytes: int) -> dict[str, float]:
    """Return {"pageable": GB/s, "pinned": GB/s} for copying `nbytes` bytes from the host to the
    GPU (GB/s = 1e9 bytes per second), once from ordinary (pageable) host memory and once from
    pinned (page-locked) host memory.

    TODO:
    - make a uint8 destination tensor of nbytes on "cuda", a pageable host tensor, and a pinned
      one (torch.empty(..., pin_memory=True)); allocate them before you start timing;
    - time a few copies of each (dst.copy_(src, non_blocking=True)) after one warm-up copy;
      a GPU copy is queued, not finished, when copy_ returns: synchronize before you stop
      the clock;
    - bytes / median seconds / 1e9.
    """
    raise NotImplementedError("measure_h2d: TODO")
