# why: the x tile and its halo in shared memory, one output a thread, the weights read from global memory at every product (a few values every thread reads: the cache serves them)
"""1-D convolution: each block stages its 256 values of x and the halo in shared memory; the
weights stay in global memory, read by every thread at each product."""

import cupy as cp
import numpy as np

SOURCE = r"""
#define BLOCK 256
#define MAX_R 31

extern "C" __global__ void conv1d_wglobal(const float* x, const float* w, float* out, int n, int K) {
    __shared__ float tile[BLOCK + 2 * MAX_R];
    int R = (K - 1) / 2;
    long long base = (long long)blockIdx.x * BLOCK;
    for (int j = threadIdx.x; j < BLOCK + 2 * R; j += BLOCK) {
        long long g = base - R + j;
        tile[j] = g >= 0 && g < n ? x[g] : 0.0f;
    }
    __syncthreads();
    long long i = base + threadIdx.x;
    if (i < n) {
        float acc = 0.0f;
        for (int k = 0; k < K; ++k) acc += w[k] * tile[threadIdx.x + k];
        out[i] = acc;
    }
}
"""

_kernel = cp.RawKernel(SOURCE, "conv1d_wglobal")


def conv1d(x, w, out):
    n = x.size
    _kernel(((n + 255) // 256,), (256,), (x, w, out, np.int32(n), np.int32(w.size)))
