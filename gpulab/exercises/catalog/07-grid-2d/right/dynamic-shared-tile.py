# why: a 16 x 16 tile in dynamic shared memory (extern __shared__, sized at launch, padded by hand), one element a thread
"""Tiled transpose whose tile is dynamic shared memory, indexed as a flat padded array."""

import cupy as cp
import numpy as np

SOURCE = r"""
extern "C" __global__ void transpose_dyn(const float* __restrict__ a, float* __restrict__ out,
                                         int rows, int cols) {
    extern __shared__ float tile[];  // blockDim.y rows of blockDim.x + 1 floats
    const int pitch = blockDim.x + 1;
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    int r = blockIdx.y * blockDim.y + threadIdx.y;
    if (r < rows && c < cols) tile[threadIdx.y * pitch + threadIdx.x] = a[(long long)r * cols + c];
    __syncthreads();
    // the block's tile lands transposed: thread (x, y) writes out row blockIdx.x * B + y,
    // column blockIdx.y * B + x, which is tile[x][y]
    int oc = blockIdx.y * blockDim.y + threadIdx.x;
    int orow = blockIdx.x * blockDim.x + threadIdx.y;
    if (orow < cols && oc < rows) out[(long long)orow * rows + oc] = tile[threadIdx.x * pitch + threadIdx.y];
}
"""

B = 16
_kernel = cp.RawKernel(SOURCE, "transpose_dyn")


def transpose(a, out):
    rows, cols = a.shape
    grid = ((cols + B - 1) // B, (rows + B - 1) // B)
    _kernel(grid, (B, B), (a, out, np.int32(rows), np.int32(cols)), shared_mem=B * (B + 1) * 4)
