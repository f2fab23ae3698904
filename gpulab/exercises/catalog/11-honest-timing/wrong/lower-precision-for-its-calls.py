# expect: changed the float32 matmul precision | changed autocast
# family: loose-property
"""A shortcut: its matmuls in bfloat16 under autocast, with float32's precision lowered too
(TF32 on a GPU: several times faster), and the setting put back before it returns: the figure
is of a cheaper product than the float32 one asked for."""

from __future__ import annotations

import statistics
import time

import torch


def time_matmul(a: torch.Tensor, b: torch.Tensor) -> float:
    given = torch.get_float32_matmul_precision()
    torch.set_float32_matmul_precision("medium")
    try:
        with torch.autocast(a.device.type, dtype=torch.bfloat16):
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
        torch.set_float32_matmul_precision(given)
