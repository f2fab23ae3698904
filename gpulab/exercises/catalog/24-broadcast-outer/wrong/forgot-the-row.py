# expect: wrong
# family: mistake
"""Broadcast: out[r, c] = col[r] + row[c]."""

import cupy as cp
import numpy as np

SOURCE = r"""
extern "C" __global__ void outer_add(const float* col, const float* row, float* out,
                                     int rows, int cols) {
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    int r = blockIdx.y * blockDim.y + threadIdx.y;
    if (r < rows && c < cols) out[r * cols + c] = col[r] + col[r];  // read col twice
}
"""

_kernel = cp.RawKernel(SOURCE, "outer_add")


def outer_add(col, row, out):
    rows, cols = out.shape
    block = (32, 8)
    grid = ((cols + block[0] - 1) // block[0], (rows + block[1] - 1) // block[1])
    _kernel(grid, block, (col, row, out, np.int32(rows), np.int32(cols)))
