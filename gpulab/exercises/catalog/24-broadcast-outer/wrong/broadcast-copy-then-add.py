# expect: ran inside your call
# family: library
"""Shortcut (a library does half the work): out filled with col broadcast along the rows by CuPy's copy (`out[...] = col[:, None]`), then a kernel of the learner's adds row to every element, a 1-D pass with no 2-D indexing of its own."""

import cupy as cp
import numpy as np

SOURCE = r"""
extern "C" __global__ void outer_add(const float* row, float* out, long long n, int cols) {
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i < n) out[i] += row[i % cols];
}
"""
_kernel = cp.RawKernel(SOURCE, "outer_add")


def outer_add(col, row, out):
    out[...] = col[:, None]
    n = out.size
    _kernel(((n + 255) // 256,), (256,), (row, out, np.int64(n), np.int32(out.shape[1])))
