# rung: a block reads a 32 x 32 tile of a along its rows into shared memory and writes it out along the rows of out, so both the reads and the writes are coalesced and each warp store fills whole lines
"""Rung 2: the tile, one element per thread (blocks of 32 x 32 threads). After the barrier a
warp reads a column of the tile, tile[tx][ty]: with rows of 32 floats those 32 words are 128
bytes apart, all in one of shared memory's 32 banks, so the read is served in 32 wavefronts,
one after another (a 32-way bank conflict)."""

import cupy as cp
import numpy as np

SOURCE = r"""
#define TILE 32

extern "C" __global__ void transpose(const float* a, float* out, int rows, int cols) {
    __shared__ float tile[TILE][TILE];
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
