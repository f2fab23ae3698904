# rung: pad each row of the tile to 33 floats, so a column of the tile falls in 32 different banks and a warp reads it in one wavefront instead of 32
"""Rung 3: the padded tile, still one element per thread (blocks of 32 x 32 threads). Word
(i, j) of the tile sits in bank (33 i + j) mod 32 = (i + j) mod 32: down a column the bank
changes with every row. A thread still moves one element, so a block has one load a thread in
flight before its barrier, and a 1024-thread block waits at it as a whole."""

import cupy as cp
import numpy as np

SOURCE = r"""
#define TILE 32

extern "C" __global__ void transpose(const float* a, float* out, int rows, int cols) {
    __shared__ float tile[TILE][TILE + 1];
    int tx = threadIdx.x, ty = threadIdx.y;
    int r = blockIdx.y * TILE + ty, c = blockIdx.x * TILE + tx;
    if (r < rows && c < cols) tile[ty][tx] = a[r * cols + c];
    __syncthreads();
    int orow = blockIdx.x * TILE + ty, oc = blockIdx.y * TILE + tx;  // a row of out is a column of a
    if (orow < cols && oc < rows) out[orow * rows + oc] = tile[tx][ty];
}
"""

_kernel = cp.RawKernel(SOURCE, "transpose")


def transpose(a, out):
    rows, cols = a.shape
    grid = ((cols + 31) // 32, (rows + 31) // 32)
    _kernel(grid, (32, 32), (a, out, np.int32(rows), np.int32(cols)))
