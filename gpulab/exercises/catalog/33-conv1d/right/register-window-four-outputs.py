# why: four consecutive outputs a thread, the x tile read once into a sliding register window (about K / 2 shared reads an output, not 2K), weights read from global memory
"""1-D convolution where each thread keeps a window of x in registers and slides it across 4 outputs."""

import cupy as cp
import numpy as np

SOURCE = r"""
#define THREADS 128
#define PER 4
#define SPAN (THREADS * PER)
#define MAX_R 31

extern "C" __global__ void conv1d_window(const float* x, const float* w, float* out, int n, int K) {
    __shared__ float tile[SPAN + 2 * MAX_R];
    int R = (K - 1) / 2;
    long long base = (long long)blockIdx.x * SPAN;
    for (int j = threadIdx.x; j < SPAN + 2 * R; j += THREADS) {
        long long g = base - R + j;
        tile[j] = g >= 0 && g < n ? x[g] : 0.0f;
    }
    __syncthreads();
    int first = threadIdx.x * PER;  // this thread's outputs: base + first .. base + first + 3
    float acc[PER] = {0.0f, 0.0f, 0.0f, 0.0f};
    float win[PER];
    for (int j = 0; j < PER - 1; ++j) win[j + 1] = tile[first + j];
    for (int k = 0; k < K; ++k) {
        for (int j = 0; j < PER - 1; ++j) win[j] = win[j + 1];
        win[PER - 1] = tile[first + k + PER - 1];  // one new value a step
        float wk = w[k];
        for (int j = 0; j < PER; ++j) acc[j] += wk * win[j];
    }
    for (int j = 0; j < PER; ++j) {
        long long i = base + first + j;
        if (i < n) out[i] = acc[j];
    }
}
"""

_kernel = cp.RawKernel(SOURCE, "conv1d_window")


def conv1d(x, w, out):
    n = x.size
    blocks = (n + 511) // 512
    _kernel((blocks,), (128,), (x, w, out, np.int32(n), np.int32(w.size)))
