# expect: ran inside your call
# family: library
"""Shortcut (a library does the work in pieces): a tiled kernel of the learner's on the first block row of out, cupy.matmul on the rest."""

import cupy as cp
import numpy as np

SOURCE = r"""
extern "C" __global__ void matmul(const float* a, const float* b, float* out, int M, int N, int K) {
    __shared__ float As[16][16];
    __shared__ float Bs[16][16];
    int r = blockIdx.y * 16 + threadIdx.y, c = blockIdx.x * 16 + threadIdx.x;
    float acc = 0.0f;
    for (int k0 = 0; k0 < K; k0 += 16) {
        As[threadIdx.y][threadIdx.x] = r < M && k0 + threadIdx.x < K ? a[(long long)r * K + k0 + threadIdx.x] : 0.0f;
        Bs[threadIdx.y][threadIdx.x] = c < N && k0 + threadIdx.y < K ? b[(long long)(k0 + threadIdx.y) * N + c] : 0.0f;
        __syncthreads();
        for (int k = 0; k < 16; ++k) acc += As[threadIdx.y][k] * Bs[k][threadIdx.x];
        __syncthreads();
    }
    if (r < M && c < N) out[(long long)r * N + c] = acc;
}
"""
_kernel = cp.RawKernel(SOURCE, "matmul")


def matmul(a, b, out):
    M, K = a.shape
    N = b.shape[1]
    top = min(M, 16)
    _kernel(((N + 15) // 16, 1), (16, 16), (a, b, out, np.int32(top), np.int32(N), np.int32(K)))
    if top < M:
        cp.matmul(a[top:], b, out=out[top:])
