# expect: cold call
# family: mistake
"""Wrong: no warm-up, one call: it times the first call at this shape, library set-up included."""

from __future__ import annotations

import time

import torch


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)  # wait until the GPU has really finished


def time_matmul(a: torch.Tensor, b: torch.Tensor) -> float:
    _sync(a.device)
    t0 = time.perf_counter()
    a @ b
    _sync(a.device)
    return time.perf_counter() - t0
