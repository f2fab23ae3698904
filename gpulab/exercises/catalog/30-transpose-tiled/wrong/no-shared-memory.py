# expect: uses no shared memory
# family: loose-property
"""Wrong here: the naive transpose, straight from global memory. Correct (it is what grid-2d
accepts) but its writes land a row apart; this exercise is the tile through shared memory."""

import cupy as cp
import numpy as np

SOURCE = r"""
#define TILE 32
#define ROWS 8

extern "C" __global__ void transpose(const float* a, float* out, int rows, int cols) {
    int tx = threadIdx.x, ty = threadIdx.y;
    int c = blockIdx.x * TILE + tx;
    for (int j = ty; j < TILE; j += ROWS) {
        int r = blockIdx.y * TILE + j;
        if (r < rows && c < cols) out[c * rows + r] = a[r * cols + c];  // scattered writes
    }
}
"""

_kernel = cp.RawKernel(SOURCE, "transpose")


def transpose(a, out):
    rows, cols = a.shape
    grid = ((cols + 31) // 32, (rows + 31) // 32)
    _kernel(grid, (32, 8), (a, out, np.int32(rows), np.int32(cols)))
