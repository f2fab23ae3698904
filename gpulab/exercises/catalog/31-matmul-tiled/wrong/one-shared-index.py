# expect: touched shared memory | uses no shared memory | shares
# family: property-proxy
# emulator-only: on a GPU the compiled code shows a shared value read by other threads, and the counts of shared accesses that would tell a tile from one index need Nsight Compute
"""matmul with no tiles: thread 0 puts K in shared memory, every thread reads it, then a naive global-memory dot product."""

import cupy as cp
import numpy as np

_k = cp.RawKernel(
    r"""
extern "C" __global__ void mm(const float* a, const float* b, float* c, int M, int K, int N) {
    __shared__ int dims[1];
    if (threadIdx.x == 0 && threadIdx.y == 0) dims[0] = K;
    __syncthreads();
    int kk = dims[0];
    int r = blockIdx.y * blockDim.y + threadIdx.y, col = blockIdx.x * blockDim.x + threadIdx.x;
    if (r < M && col < N) {
        float s = 0.0f;
        for (int k = 0; k < kk; ++k) s += a[r * kk + k] * b[k * N + col];
        c[r * N + col] = s;
    }
}""",
    "mm",
)


def matmul(a, b, out):
    M, K = a.shape
    N = b.shape[1]
    _k(
        ((N + 15) // 16, (M + 15) // 16),
        (16, 16),
        (a, b, out, np.int32(M), np.int32(K), np.int32(N)),
    )
