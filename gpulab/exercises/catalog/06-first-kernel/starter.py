"""Exercise: your first CUDA kernel. saxpy: out[i] = a * x[i] + y[i], one thread per element."""

from __future__ import annotations

import cupy as cp
import numpy as np

SOURCE = r"""
extern "C" __global__
void saxpy(float a, const float* __restrict__ x, const float* __restrict__ y,
           float* __restrict__ out, long long n) {
    // TODO: compute this thread's global index i from blockIdx.x, blockDim.x and threadIdx.x,
    //       and if i is inside the array, write out[i] = a * x[i] + y[i].
}
"""

THREADS = 256
_saxpy = cp.RawKernel(SOURCE, "saxpy")


def saxpy(a: float, x: cp.ndarray, y: cp.ndarray, out: cp.ndarray) -> None:
    n = x.size
    blocks = 1  # TODO: enough blocks of THREADS threads to cover all n elements
    _saxpy((blocks,), (THREADS,), (np.float32(a), x, y, out, np.int64(n)))
