# expect: wrong
# family: mistake
"""1-D convolution (cross-correlation), K odd weights centred on each element, zeros outside."""

import cupy as cp
import numpy as np

SOURCE = r"""
#define BLOCK 256
#define MAX_R 31

extern "C" __global__ void conv1d(const float* x, const float* w, float* out, int n, int K) {
    __shared__ float tile[BLOCK + 2 * MAX_R];
    __shared__ float ws[2 * MAX_R + 1];
    int t = threadIdx.x;
    int R = (K - 1) / 2;
    int base = blockIdx.x * BLOCK;
    int i = base + t;
    for (int j = t; j < BLOCK + 2 * R; j += BLOCK) {
        int g = base - R + j;
        tile[j] = g >= 0 && g < n ? x[g] : 0.0f;
    }
    if (t < K) ws[t] = w[t];
    __syncthreads();
    if (i < n) {
        float s = 0.0f;
        for (int k = 0; k < K; ++k) s += ws[K - 1 - k] * tile[t + k];  // a true convolution: flipped
        out[i] = s;
    }
}
"""

_kernel = cp.RawKernel(SOURCE, "conv1d")


def conv1d(x, w, out):
    n, k = x.size, w.size
    blocks = (n + 255) // 256
    _kernel((blocks,), (256,), (x, w, out, np.int32(n), np.int32(k)))
