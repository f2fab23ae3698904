# expect: never written
# family: mistake
"""Transpose through a shared-memory tile: out[c, r] = a[r, c] with coalesced reads and writes."""

import cupy as cp
import numpy as np

SOURCE = r"""
#define TILE 32
#define ROWS 8

extern "C" __global__ void transpose(const float* a, float* out, int rows, int cols) {
    __shared__ float tile[TILE][TILE + 1];
    int tx = threadIdx.x, ty = threadIdx.y;
    int c = blockIdx.x * TILE + tx;
    for (int j = ty; j < TILE; j += ROWS) {
        int r = blockIdx.y * TILE + j;
        if (r < rows && c < cols) tile[j][tx] = a[r * cols + c];
    }
    __syncthreads();
    int oc = blockIdx.y * TILE + tx;  // a column of out is a row of a
    for (int j = ty; j < TILE; j += ROWS) {
        int orow = blockIdx.x * TILE + j;
        if (orow < cols && oc < rows) out[orow * rows + oc] = tile[tx][j];
    }
}
"""

_kernel = cp.RawKernel(SOURCE, "transpose")


def transpose(a, out):
    rows, cols = a.shape
    grid = (max(1, cols // 32), max(1, rows // 32))  # misses the ragged edges
    _kernel(grid, (32, 8), (a, out, np.int32(rows), np.int32(cols)))
