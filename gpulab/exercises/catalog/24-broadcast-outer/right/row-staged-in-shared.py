# why: the block's slice of row and of col staged in shared memory (each loaded once a block, then shared by its threads), 32 x 8 blocks
"""Broadcast with each block's 32 row values and 8 col values loaded once into shared memory."""

import cupy as cp
import numpy as np

SOURCE = r"""
extern "C" __global__ void outer_add_smem(const float* col, const float* row, float* out,
                                          int rows, int cols) {
    __shared__ float srow[32];
    __shared__ float scol[8];
    int c = blockIdx.x * 32 + threadIdx.x;
    int r = blockIdx.y * 8 + threadIdx.y;
    if (threadIdx.y == 0 && c < cols) srow[threadIdx.x] = row[c];
    if (threadIdx.x == 0 && r < rows) scol[threadIdx.y] = col[r];
    __syncthreads();
    if (r < rows && c < cols) out[(long long)r * cols + c] = scol[threadIdx.y] + srow[threadIdx.x];
}
"""

_kernel = cp.RawKernel(SOURCE, "outer_add_smem")


def outer_add(col, row, out):
    rows, cols = out.shape
    grid = ((cols + 31) // 32, (rows + 7) // 8)
    _kernel(grid, (32, 8), (col, row, out, np.int32(rows), np.int32(cols)))
