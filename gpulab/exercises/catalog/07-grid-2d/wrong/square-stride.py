# expect: expected | illegal memory access | out-of-bounds read
# family: mistake
"""Wrong: reads a with a stride of rows instead of cols, which is only right for square matrices."""

from __future__ import annotations

import cupy as cp
import numpy as np

SOURCE = r"""
extern "C" __global__
void transpose(const float* __restrict__ a, float* __restrict__ out, int rows, int cols) {
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    int r = blockIdx.y * blockDim.y + threadIdx.y;
    if (r < rows && c < cols) {
        out[(long long)c * rows + r] = a[(long long)r * rows + c];
    }
}
"""

BLOCK = (16, 16)
_transpose = cp.RawKernel(SOURCE, "transpose")


def transpose(a: cp.ndarray, out: cp.ndarray) -> None:
    rows, cols = a.shape
    grid = ((cols + BLOCK[0] - 1) // BLOCK[0], (rows + BLOCK[1] - 1) // BLOCK[1])
    _transpose(grid, BLOCK, (a, out, np.int32(rows), np.int32(cols)))
