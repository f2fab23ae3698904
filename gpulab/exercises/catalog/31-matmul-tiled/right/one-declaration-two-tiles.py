# why: both tiles declared in one statement (`__shared__ float As[..][..], Bs[..][..];`), valid CUDA C
"""Tiled matrix product in float32: out = a @ b.

Each block computes a 64 x 64 tile of out with 16 x 16 threads; each thread keeps a 4 x 4 block
of results in registers. Per step along K, the block stages a 64 x 16 tile of a and a 16 x 64
tile of b in shared memory; a thread then reads 4 values of each and does 16 multiply-adds,
twice as many per shared load as the one-output-per-thread kernel.
"""

import cupy as cp
import numpy as np

SOURCE = r"""
#define BM 64
#define BN 64
#define BK 16
#define T 16
#define R 4

extern "C" __global__ void matmul(const float* a, const float* b, float* out, int M, int N, int K) {
    // As[k][m]: a's tile stored transposed; both tiles in one declaration
    __shared__ float As[BK][BM + 4], Bs[BK][BN + 4];
    int tx = threadIdx.x, ty = threadIdx.y;
    int tid = ty * T + tx;
    int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
    float acc[R][R];
    for (int i = 0; i < R; ++i)
        for (int j = 0; j < R; ++j) acc[i][j] = 0.0f;
    for (int k0 = 0; k0 < K; k0 += BK) {
        for (int e = tid; e < BM * BK; e += T * T) {
            int m = e / BK, k = e % BK;  // consecutive threads read along a row of a
            int r = row0 + m, kk = k0 + k;
            As[k][m] = r < M && kk < K ? a[r * K + kk] : 0.0f;
        }
        for (int e = tid; e < BK * BN; e += T * T) {
            int k = e / BN, n = e % BN;  // and along a row of b
            int kk = k0 + k, c = col0 + n;
            Bs[k][n] = kk < K && c < N ? b[kk * N + c] : 0.0f;
        }
        __syncthreads();
        for (int k = 0; k < BK; ++k) {
            float av[R], bv[R];
            for (int i = 0; i < R; ++i) av[i] = As[k][ty + T * i];
            for (int j = 0; j < R; ++j) bv[j] = Bs[k][tx + T * j];
            for (int i = 0; i < R; ++i)
                for (int j = 0; j < R; ++j) acc[i][j] += av[i] * bv[j];
        }
        __syncthreads();
    }
    for (int i = 0; i < R; ++i) {
        int r = row0 + ty + T * i;
        for (int j = 0; j < R; ++j) {
            int c = col0 + tx + T * j;  // neighbouring threads write neighbouring columns
            if (r < M && c < N) out[r * N + c] = acc[i][j];
        }
    }
}
"""

_kernel = cp.RawKernel(SOURCE, "matmul")


def matmul(a, b, out):
    M, K = a.shape
    N = b.shape[1]
    grid = ((N + 63) // 64, (M + 63) // 64)
    _kernel(grid, (16, 16), (a, b, out, np.int32(M), np.int32(N), np.int32(K)))
