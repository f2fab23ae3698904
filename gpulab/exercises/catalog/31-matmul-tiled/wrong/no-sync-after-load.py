# expect: wrong | shared-memory race
# family: mistake
"""Tiled matrix product in float32: out = a @ b, tiles of a and b staged in shared memory."""

import cupy as cp
import numpy as np

SOURCE = r"""
#define TILE 16

extern "C" __global__ void matmul(const float* a, const float* b, float* out, int M, int N, int K) {
    __shared__ float As[TILE][TILE];
    __shared__ float Bs[TILE][TILE];
    int tx = threadIdx.x, ty = threadIdx.y;
    int row = blockIdx.y * TILE + ty, col = blockIdx.x * TILE + tx;
    float acc = 0.0f;
    for (int k0 = 0; k0 < K; k0 += TILE) {
        As[ty][tx] = row < M && k0 + tx < K ? a[row * K + k0 + tx] : 0.0f;
        Bs[ty][tx] = k0 + ty < K && col < N ? b[(k0 + ty) * N + col] : 0.0f;
        // no __syncthreads(): the tile is used before other warps loaded it
        for (int k = 0; k < TILE; ++k) acc += As[ty][k] * Bs[k][tx];
        __syncthreads();
    }
    if (row < M && col < N) out[row * N + col] = acc;
}
"""

_kernel = cp.RawKernel(SOURCE, "matmul")


def matmul(a, b, out):
    M, K = a.shape
    N = b.shape[1]
    grid = ((N + 15) // 16, (M + 15) // 16)
    _kernel(grid, (16, 16), (a, b, out, np.int32(M), np.int32(N), np.int32(K)))
