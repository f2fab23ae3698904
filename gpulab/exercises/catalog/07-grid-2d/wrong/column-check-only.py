# expect: past the end
# family: mistake
"""Wrong: checks the column but not the row, so threads below the last row write past the end."""

from __future__ import annotations

import cupy as cp
import numpy as np

SOURCE = r"""
extern "C" __global__
void transpose(const float* __restrict__ a, float* __restrict__ out, int rows, int cols) {
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    int r = blockIdx.y * blockDim.y + threadIdx.y;
    if (c < cols) {
        out[(long long)c * rows + r] = a[(long long)r * cols + c];
    }
}
"""

BLOCK = (16, 16)
_transpose = cp.RawKernel(SOURCE, "transpose")


def transpose(a: cp.ndarray, out: cp.ndarray) -> None:
    rows, cols = a.shape
    grid = ((cols + BLOCK[0] - 1) // BLOCK[0], (rows + BLOCK[1] - 1) // BLOCK[1])
    _transpose(grid, BLOCK, (a, out, np.int32(rows), np.int32(cols)))
