# why: returns the fastest of the timed calls (the minimum), not the median
"""Warm-up, then the best of several calls: the least disturbed one."""

from __future__ import annotations

import time

import torch


def time_matmul(a: torch.Tensor, b: torch.Tensor) -> float:
    a @ b  # one warm-up call
    best = float("inf")
    for _ in range(8):
        if a.is_cuda:
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        a @ b
        if a.is_cuda:
            torch.cuda.synchronize()
        best = min(best, time.perf_counter() - t0)
    return best
