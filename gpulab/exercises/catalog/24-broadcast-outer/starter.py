"""Broadcast: out[r, c] = col[r] + row[c]."""

import cupy as cp
import numpy as np

SOURCE = r"""
extern "C" __global__ void outer_add(const float* col, const float* row, float* out,
                                     int rows, int cols) {
    // TODO: one thread per element of out
}
"""

_kernel = cp.RawKernel(SOURCE, "outer_add")


def outer_add(col, row, out):
    rows, cols = out.shape
    block = (32, 8)
    grid = (1, 1)  # TODO: cover all cols along x and all rows along y
    _kernel(grid, block, (col, row, out, np.int32(rows), np.int32(cols)))
