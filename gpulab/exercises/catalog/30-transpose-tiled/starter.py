"""Transpose through a shared-memory tile: out[c, r] = a[r, c] with coalesced reads and writes."""

import cupy as cp
import numpy as np

SOURCE = r"""
#define TILE 32
#define ROWS 8

extern "C" __global__ void transpose(const float* a, float* out, int rows, int cols) {
    __shared__ float tile[TILE][TILE + 1];
    int tx = threadIdx.x, ty = threadIdx.y;
    // TODO: read the tile at (blockIdx.y * TILE, blockIdx.x * TILE) of a, wait,
    //       write it transposed at (blockIdx.x * TILE, blockIdx.y * TILE) of out
}
"""

_kernel = cp.RawKernel(SOURCE, "transpose")


def transpose(a, out):
    rows, cols = a.shape
    grid = ((cols + 31) // 32, (rows + 31) // 32)
    _kernel(grid, (32, 8), (a, out, np.int32(rows), np.int32(cols)))
