# expect: pinned = | pageable =
# family: mistake
"""Wrong: the two figures are returned under each other's names."""

from __future__ import annotations

import statistics
import time

import torch


def _gbs(src: torch.Tensor, dst: torch.Tensor, repeats: int = 7) -> float:
    times = []
    for i in range(repeats + 1):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        dst.copy_(src, non_blocking=True)
        torch.cuda.synchronize()  # wait for the copy itself, not just its launch
        if i:  # the first copy is a warm-up
            times.append(time.perf_counter() - t0)
    return src.numel() * src.element_size() / statistics.median(times) / 1e9


def measure_h2d(nbytes: int) -> dict[str, float]:
    """GB/s (1e9 bytes per second) of copying nbytes from host to GPU, from pageable and from
    pinned host memory."""
    dst = torch.empty(nbytes, dtype=torch.uint8, device="cuda")
    pageable = torch.ones(nbytes, dtype=torch.uint8)  # written once, so its pages are real
    pinned = torch.empty(nbytes, dtype=torch.uint8, pin_memory=True)  # allocated untimed
    pinned.copy_(pageable)
    return {"pinned": _gbs(pageable, dst), "pageable": _gbs(pinned, dst)}
