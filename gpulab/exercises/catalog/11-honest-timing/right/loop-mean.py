# why: times a whole loop of queued calls with one synchronize at the end and divides (a mean)
"""Warm up, then one interval around N calls, synchronized once: seconds per call on average."""

from __future__ import annotations

import time

import torch


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def time_matmul(a: torch.Tensor, b: torch.Tensor, runs: int = 10) -> float:
    for _ in range(2):
        a @ b
    _sync(a.device)
    t0 = time.perf_counter()
    for _ in range(runs):
        a @ b
    _sync(a.device)  # the last call is finished, so all of them are
    return (time.perf_counter() - t0) / runs
