# expect: changed the CPU thread count
# family: loose-property
"""A shortcut: every thread of the machine for its own matmuls (the check gave it one), so its
figure is of a faster a @ b than the one asked for; on a 2-core box that is under 2x and the
fastest-call rule alone cannot see it, so the thread count is read at each matmul."""

from __future__ import annotations

import os
import statistics
import time

import torch


def time_matmul(a: torch.Tensor, b: torch.Tensor) -> float:
    given = torch.get_num_threads()
    if a.device.type == "cpu":
        torch.set_num_threads(os.cpu_count() or 2)
    try:
        for _ in range(3):
            a @ b
        if a.is_cuda:
            torch.cuda.synchronize()
        times = []
        for _ in range(10):
            t0 = time.perf_counter()
            a @ b
            if a.is_cuda:
                torch.cuda.synchronize()
            times.append(time.perf_counter() - t0)
        return statistics.median(times)
    finally:
        torch.set_num_threads(given)
