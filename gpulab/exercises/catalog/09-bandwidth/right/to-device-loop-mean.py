# why: copies with .to("cuda") (a new tensor each time) in one timed loop, synchronized once
"""A loop of .to() copies, one synchronize at the end, total bytes over total seconds."""

from __future__ import annotations

import time

import torch


def _gbs(src: torch.Tensor, runs: int = 6) -> float:
    src.to("cuda", non_blocking=True)  # warm-up: the allocator's cache now holds a block
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(runs):
        src.to("cuda", non_blocking=True)
    torch.cuda.synchronize()
    return runs * src.numel() * src.element_size() / (time.perf_counter() - t0) / 1e9


def measure_h2d(nbytes: int) -> dict[str, float]:
    pageable = torch.ones(nbytes // 4, dtype=torch.float32)  # the same bytes in float32
    pinned = torch.empty(nbytes // 4, dtype=torch.float32, pin_memory=True)
    pinned.copy_(pageable)
    return {"pageable": _gbs(pageable), "pinned": _gbs(pinned)}
