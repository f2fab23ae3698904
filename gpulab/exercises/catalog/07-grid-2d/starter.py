"""Exercise: a 2-D grid kernel. Transpose a (rows x cols) float32 matrix into out (cols x rows)."""

from __future__ import annotations

import cupy as cp
import numpy as np

SOURCE = r"""
extern "C" __global__
void transpose(const float* __restrict__ a, float* __restrict__ out, int rows, int cols) {
    // a is row-major: element (r, c) is a[r * cols + c]. out has cols rows of rows elements.
    // TODO: this thread's column c from the x coordinates (blockIdx.x, blockDim.x, threadIdx.x)
    //       and its row r from the y coordinates; if both are inside the matrix, write
    //       out's element (c, r).
}
"""

BLOCK = (16, 16)  # threads per block in x and y
_transpose = cp.RawKernel(SOURCE, "transpose")


def transpose(a: cp.ndarray, out: cp.ndarray) -> None:
    rows, cols = a.shape
    grid = (1, 1)  # TODO: enough blocks in x to cover cols and in y to cover rows
    _transpose(grid, BLOCK, (a, out, np.int32(rows), np.int32(cols)))
