# rung: each thread computes an 8 x 8 block of outputs, so every value it reads from shared memory feeds 8 multiply-adds, on both sides
"""Rung 5: a 2-D register tile. A block of 256 threads computes a 128 x 128 tile of out; each
thread keeps 8 x 8 results in registers. Per k it reads 8 values of a and 8 of b from shared
memory into registers and does 64 multiply-adds: 4 per value read, against 0.5 for rung 3.
Its loads from global memory are still one float at a time."""

import cupy as cp
import numpy as np

SOURCE = r"""
#define BM 128
#define BN 128
#define BK 8
#define TM 8
#define TN 8
#define THREADS 256

extern "C" __global__ void __launch_bounds__(THREADS) matmul(const float* a, const float* b,
                                                             float* out, int M, int N, int K) {
    __shared__ float As[BM][BK];
    __shared__ float Bs[BK][BN];
    int tid = threadIdx.x;
    int trow = tid / (BN / TN), tcol = tid % (BN / TN);  // 16 x 16 threads
    int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
    float acc[TM][TN];
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] = 0.0f;
    for (int k0 = 0; k0 < K; k0 += BK) {
        for (int e = tid; e < BM * BK; e += THREADS) {
            int m = e / BK, k = e % BK, r = row0 + m, ka = k0 + k;
            As[m][k] = r < M && ka < K ? a[r * K + ka] : 0.0f;
        }
        for (int e = tid; e < BK * BN; e += THREADS) {
            int k = e / BN, n = e % BN, kb = k0 + k, c = col0 + n;
            Bs[k][n] = kb < K && c < N ? b[kb * N + c] : 0.0f;
        }
        __syncthreads();
#pragma unroll
        for (int k = 0; k < BK; ++k) {
            float av[TM], bv[TN];
#pragma unroll
            for (int i = 0; i < TM; ++i) av[i] = As[trow * TM + i][k];
#pragma unroll
            for (int j = 0; j < TN; ++j) bv[j] = Bs[k][tcol * TN + j];
#pragma unroll
            for (int i = 0; i < TM; ++i)
#pragma unroll
                for (int j = 0; j < TN; ++j) acc[i][j] += av[i] * bv[j];
        }
        __syncthreads();
    }
#pragma unroll
    for (int i = 0; i < TM; ++i) {
        int r = row0 + trow * TM + i;
#pragma unroll
        for (int j = 0; j < TN; ++j) {
            int c = col0 + tcol * TN + j;
            if (r < M && c < N) out[r * N + c] = acc[i][j];
        }
    }
}
"""

_kernel = cp.RawKernel(SOURCE, "matmul")


def matmul(a, b, out):
    M, K = a.shape
    N = b.shape[1]
    grid = ((N + 127) // 128, (M + 127) // 128)
    _kernel(grid, (256,), (a, b, out, np.int32(M), np.int32(N), np.int32(K)))
