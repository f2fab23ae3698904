# rung: one thread per element reads a[r][c] along a row of a and writes out[c][r] down a column of out, so a warp's 32 reads are 128 contiguous bytes and its 32 writes fall in 32 sectors a row apart
# expect: uses no shared memory
"""Rung 1, below this exercise: the transpose as first written, in blocks of 32 x 32 threads.
The reads are coalesced, the writes are not: each warp-wide store touches 32 sectors to write
4 bytes in each. The check refuses it (after every case matched) because this exercise is the
tile through shared memory."""

import cupy as cp
import numpy as np

SOURCE = r"""
#define TILE 32

extern "C" __global__ void transpose(const float* a, float* out, int rows, int cols) {
    int c = blockIdx.x * TILE + threadIdx.x;
    int r = blockIdx.y * TILE + threadIdx.y;
    if (r < rows && c < cols) out[c * rows + r] = a[r * cols + c];
}
"""

_kernel = cp.RawKernel(SOURCE, "transpose")


def transpose(a, out):
    rows, cols = a.shape
    grid = ((cols + 31) // 32, (rows + 31) // 32)
    _kernel(grid, (32, 32), (a, out, np.int32(rows), np.int32(cols)))
