# rung: each thread computes a column of 8 outputs, so every value of b it reads from shared memory feeds 8 multiply-adds
"""Rung 4: a 1-D register tile. A block of 512 threads computes a 64 x 64 tile of out; each
thread keeps 8 results of one column in registers. Per step of 8 along K the block stages 64 x 8
of a and 8 x 64 of b (one element each a thread); per k a thread reads one value of b and 8 of a
(the same for the whole warp: a broadcast) for 8 multiply-adds."""

import cupy as cp
import numpy as np

SOURCE = r"""
#define BM 64
#define BN 64
#define BK 8
#define TM 8

extern "C" __global__ void __launch_bounds__(512) matmul(const float* a, const float* b, float* out,
                                                         int M, int N, int K) {
    __shared__ float As[BM][BK];
    __shared__ float Bs[BK][BN];
    int tid = threadIdx.x;
    int tcol = tid % BN, trow = tid / BN;  // this thread's column, and its group of TM rows
    int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
    int ar = tid / BK, ak = tid % BK;  // the element of a's tile this thread loads
    int bk = tid / BN, bn = tid % BN;  // and of b's: neighbours read neighbours
    float acc[TM];
#pragma unroll
    for (int i = 0; i < TM; ++i) acc[i] = 0.0f;
    for (int k0 = 0; k0 < K; k0 += BK) {
        int r = row0 + ar, ka = k0 + ak;
        As[ar][ak] = r < M && ka < K ? a[r * K + ka] : 0.0f;
        int kb = k0 + bk, c = col0 + bn;
        Bs[bk][bn] = kb < K && c < N ? b[kb * N + c] : 0.0f;
        __syncthreads();
#pragma unroll
        for (int k = 0; k < BK; ++k) {
            float bv = Bs[k][tcol];
#pragma unroll
            for (int i = 0; i < TM; ++i) acc[i] += As[trow * TM + i][k] * bv;
        }
        __syncthreads();
    }
#pragma unroll
    for (int i = 0; i < TM; ++i) {
        int r = row0 + trow * TM + i, c = col0 + tcol;
        if (r < M && c < N) out[r * N + c] = acc[i];
    }
}
"""

_kernel = cp.RawKernel(SOURCE, "matmul")


def matmul(a, b, out):
    M, K = a.shape
    N = b.shape[1]
    grid = ((N + 63) // 64, (M + 63) // 64)
    _kernel(grid, (512,), (a, b, out, np.int32(M), np.int32(N), np.int32(K)))
