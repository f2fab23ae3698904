# why: times the GPU with a CUDA event pair per call (no host clock) and the CPU with perf_counter
"""CUDA events on a GPU, perf_counter on the CPU; the median after warm-up."""

from __future__ import annotations

import statistics
import time

import torch


def time_matmul(a: torch.Tensor, b: torch.Tensor, runs: int = 10) -> float:
    for _ in range(3):
        a @ b
    times = []
    if a.device.type == "cuda":
        for _ in range(runs):
            start = torch.cuda.Event(enable_timing=True)
            end = torch.cuda.Event(enable_timing=True)
            start.record()
            a @ b
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end) / 1e3)  # elapsed_time is in milliseconds
    else:
        for _ in range(runs):
            t0 = time.perf_counter()
            a @ b
            times.append(time.perf_counter() - t0)
    return statistics.median(times)
