# expect: out[256] = nan
# family: mistake
"""Wrong: the index forgets the block, so every block writes the first THREADS elements."""

from __future__ import annotations

import cupy as cp
import numpy as np

SOURCE = r"""
extern "C" __global__
void saxpy(float a, const float* __restrict__ x, const float* __restrict__ y,
           float* __restrict__ out, long long n) {
    // This thread's element: which block, times the block's size, plus its place in the block.
    long long i = threadIdx.x;
    if (i < n) {  // the last block usually has threads past the end: they do nothing
        out[i] = a * x[i] + y[i];
    }
}
"""

THREADS = 256  # a multiple of the warp size (32)
_saxpy = cp.RawKernel(SOURCE, "saxpy")  # compiled by NVRTC on the first launch, then cached


def saxpy(a: float, x: cp.ndarray, y: cp.ndarray, out: cp.ndarray) -> None:
    n = x.size
    blocks = (n + THREADS - 1) // THREADS  # ceil(n / THREADS): every element gets a thread
    # RawKernel arguments must match the C types: a Python float would arrive as a double.
    _saxpy((blocks,), (THREADS,), (np.float32(a), x, y, out, np.int64(n)))
