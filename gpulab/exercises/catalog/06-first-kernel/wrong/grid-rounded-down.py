# expect: never written
# family: mistake
"""Wrong: the grid is n // THREADS blocks, rounded down, so the tail is never written."""

from __future__ import annotations

import cupy as cp
import numpy as np

SOURCE = r"""
extern "C" __global__
void saxpy(float a, const float* __restrict__ x, const float* __restrict__ y,
           float* __restrict__ out, long long n) {
    // This thread's element: which block, times the block's size, plus its place in the block.
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {  // the last block usually has threads past the end: they do nothing
        out[i] = a * x[i] + y[i];
    }
}
"""

THREADS = 256  # a multiple of the warp size (32)
_saxpy = cp.RawKernel(SOURCE, "saxpy")  # compiled by NVRTC on the first launch, then cached


def saxpy(a: float, x: cp.ndarray, y: cp.ndarray, out: cp.ndarray) -> None:
    n = x.size
    blocks = max(1, n // THREADS)
    # RawKernel arguments must match the C types: a Python float would arrive as a double.
    _saxpy((blocks,), (THREADS,), (np.float32(a), x, y, out, np.int64(n)))
