# expect: wrong
# family: mistake
"""Zip: out[i] = |a[i] - b[i]|."""

import cupy as cp
import numpy as np

SOURCE = r"""
extern "C" __global__ void abs_diff(const float* a, const float* b, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = a[i] - b[i];  // forgot the absolute value
}
"""

_kernel = cp.RawKernel(SOURCE, "abs_diff")


def abs_diff(a, b, out):
    n = a.size
    threads = 256
    blocks = (n + threads - 1) // threads
    _kernel((blocks,), (threads,), (a, b, out, np.int32(n)))
