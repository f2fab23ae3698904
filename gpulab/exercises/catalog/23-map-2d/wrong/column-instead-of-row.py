# expect: wrong
# family: mistake
"""2-D map: out[r, c] = a[r, c] + r over a C-ordered rows x cols matrix."""

import cupy as cp
import numpy as np

SOURCE = r"""
extern "C" __global__ void add_row_index(const float* a, float* out, int rows, int cols) {
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    int r = blockIdx.y * blockDim.y + threadIdx.y;
    if (r < rows && c < cols) {
        int i = r * cols + c;
        out[i] = a[i] + (float)c;  // added the column
    }
}
"""

_kernel = cp.RawKernel(SOURCE, "add_row_index")


def add_row_index(a, out):
    rows, cols = a.shape
    block = (32, 8)
    grid = ((cols + block[0] - 1) // block[0], (rows + block[1] - 1) // block[1])
    _kernel(grid, block, (a, out, np.int32(rows), np.int32(cols)))
