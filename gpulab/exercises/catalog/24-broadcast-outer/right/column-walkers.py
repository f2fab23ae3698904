# why: 1-D blocks across the columns, each thread keeping row[c] in a register and walking down the rows (a grid-stride loop in y over a short 2-D grid)
"""Broadcast where a thread owns a column: row[c] is read once, then every row of that column."""

import cupy as cp
import numpy as np

SOURCE = r"""
extern "C" __global__ void outer_add_cols(const float* col, const float* row, float* out,
                                          int rows, int cols) {
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= cols) return;
    float rc = row[c];
    for (int r = blockIdx.y; r < rows; r += gridDim.y) {
        out[(long long)r * cols + c] = col[r] + rc;
    }
}
"""

_kernel = cp.RawKernel(SOURCE, "outer_add_cols")


def outer_add(col, row, out):
    rows, cols = out.shape
    grid = ((cols + 127) // 128, min(rows, 16))
    _kernel(grid, (128,), (col, row, out, np.int32(rows), np.int32(cols)))
