# rung: one thread per output, reading its row of a and its column of b from global memory, with neighbouring threads on neighbouring rows
# expect: uses no shared memory
"""Rung 1, below this exercise: the naive product as first written. Neighbouring threads
(threadIdx.x) take neighbouring rows, so a warp's 32 reads of a are K floats apart (a sector
each) and its writes of out N floats apart; nothing is reused. The check refuses it (after every
case matched) because this exercise is the tiles in shared memory."""

import cupy as cp
import numpy as np

SOURCE = r"""
extern "C" __global__ void matmul(const float* a, const float* b, float* out, int M, int N, int K) {
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    int c = blockIdx.y * blockDim.y + threadIdx.y;
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
    grid = ((M + 15) // 16, (N + 15) // 16)
    _kernel(grid, (16, 16), (a, b, out, np.int32(M), np.int32(N), np.int32(K)))
