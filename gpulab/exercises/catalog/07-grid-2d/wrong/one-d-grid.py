# expect: your launch is not 2-D
# family: loose-property
"""Property skipped: the statement asks for 'a cupy.RawKernel launched on a 2-D grid of 2-D
blocks'; this is a 1-D grid of 1-D blocks over the flat index, divided back into (r, c) with / and
%, so the two ceiling divisions and two bounds checks the lesson is about never appear."""

import cupy as cp
import numpy as np

SOURCE = r"""
extern "C" __global__ void transpose(const float* a, float* out, int rows, int cols) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= (long long)rows * cols) return;
    int r = i / cols, c = i % cols;
    out[(long long)c * rows + r] = a[i];
}
"""
_k = cp.RawKernel(SOURCE, "transpose")


def transpose(a, out):
    rows, cols = a.shape
    n = rows * cols
    _k(((n + 255) // 256,), (256,), (a, out, np.int32(rows), np.int32(cols)))
