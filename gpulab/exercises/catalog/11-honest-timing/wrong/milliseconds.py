# expect: seconds (not milliseconds)
# family: mistake
"""Wrong: returns milliseconds where seconds were asked for."""

from __future__ import annotations

import statistics
import time

import torch


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)  # wait until the GPU has really finished


def time_matmul(a: torch.Tensor, b: torch.Tensor, runs: int = 10) -> float:
    """Seconds per call of a @ b: the median of `runs` calls after warm-up calls."""
    for _ in range(3):  # the first calls pay for library set-up and kernel selection
        a @ b
    _sync(a.device)
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        a @ b
        _sync(a.device)  # on a GPU, `a @ b` returns as soon as the work is queued
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1e3
