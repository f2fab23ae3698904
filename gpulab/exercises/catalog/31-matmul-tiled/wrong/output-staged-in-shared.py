# expect: the values are read from global memory instead
# family: property-proxy
# emulator-only: on a GPU the compiled code shows a shared tile read across threads; how many shared accesses a launch made needs Nsight Compute's counters
"""Shortcut (property faked): the naive matmul, every operand read from global memory, with each
block's 16 x 16 results staged through a __shared__ tile and written out transposed within the
block: shared memory is used and shared between threads, but no input is reused from it."""

import cupy as cp
import numpy as np

SOURCE = r"""
extern "C" __global__ void matmul(const float* a, const float* b, float* out, int M, int N, int K) {
    __shared__ float tile[16][17];
    int r = blockIdx.y * 16 + threadIdx.y, c = blockIdx.x * 16 + threadIdx.x;
    float acc = 0.0f;
    if (r < M && c < N)
        for (int k = 0; k < K; ++k) acc += a[(long long)r * K + k] * b[(long long)k * N + c];
    tile[threadIdx.y][threadIdx.x] = acc;
    __syncthreads();
    // thread (x, y) writes the result thread (y, x) computed
    int orow = blockIdx.y * 16 + threadIdx.x, ocol = blockIdx.x * 16 + threadIdx.y;
    if (orow < M && ocol < N) out[(long long)orow * N + ocol] = tile[threadIdx.x][threadIdx.y];
}
"""
_kernel = cp.RawKernel(SOURCE, "matmul")


def matmul(a, b, out):
    M, K = a.shape
    N = b.shape[1]
    _kernel(
        ((N + 15) // 16, (M + 15) // 16),
        (16, 16),
        (a, b, out, np.int32(M), np.int32(N), np.int32(K)),
    )
