# why: times each copy with a CUDA event pair on the stream instead of perf_counter + synchronize
"""Events around each copy; the median; bytes per second from the events' milliseconds."""

from __future__ import annotations

import statistics

import torch


def _gbs(src: torch.Tensor, dst: torch.Tensor, repeats: int = 7) -> float:
    dst.copy_(src, non_blocking=True)  # warm-up
    times = []
    for _ in range(repeats):
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        dst.copy_(src, non_blocking=True)
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / 1e3)
    return src.numel() * src.element_size() / statistics.median(times) / 1e9


def measure_h2d(nbytes: int) -> dict[str, float]:
    dst = torch.empty(nbytes, dtype=torch.uint8, device="cuda")
    pageable = torch.ones(nbytes, dtype=torch.uint8)
    pinned = pageable.pin_memory()
    return {"pageable": _gbs(pageable, dst), "pinned": _gbs(pinned, dst)}
