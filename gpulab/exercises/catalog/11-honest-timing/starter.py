"""Exercise: time a matrix multiplication honestly, on the CPU and on the GPU."""

from __future__ import annotations

import time

import torch


def time_matmul(a: torch.Tensor, b: torch.Tensor) -> float:
    """Return the time of one `a @ b` in seconds. a and b are on the same device: the CPU or a
    GPU.

    TODO: this times one cold call, and on a GPU it stops the clock when the work has only been
    queued. Warm up first, synchronize (torch.cuda.synchronize()) before reading the clock when
    the tensors are on a GPU, and return the median of several calls.
    """
    t0 = time.perf_counter()
    a @ b
    return time.perf_counter() - t0
