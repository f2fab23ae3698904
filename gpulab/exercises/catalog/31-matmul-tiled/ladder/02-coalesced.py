# rung: neighbouring threads compute neighbouring columns, so a warp reads 32 consecutive floats of b and writes 32 of out
# expect: uses no shared memory
"""Rung 2, below this exercise: the naive product with its threads the right way round, one
output per thread reading its row of a and its column of b straight from global memory. Every
warp's access is coalesced, but every input is still fetched N or M times; the check refuses it
(after every case matched) because this exercise is the tiles in shared memory."""

import cupy as cp
import numpy as np

SOURCE = r"""
extern "C" __global__ void matmul(const float* a, const float* b, float* out, int M, int N, int K) {
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    int r = blockIdx.y * blockDim.y + threadIdx.y;
    if (r < M && c < N) {
        float acc = 0.0f;
        for (int k = 0; k < K; ++k) acc += a[r * K + k] * b[k * N + c];
        out[r * N + c] = acc;
    }
}
"""

_kernel = cp.RawKernel(SOURCE, "matmul")


def matmul(a, b, out):
    M, K = a.shape
    N = b.shape[1]
    grid = ((N + 15) // 16, (M + 15) // 16)
    _kernel(grid, (16, 16), (a, b, out, np.int32(M), np.int32(N), np.int32(K)))
