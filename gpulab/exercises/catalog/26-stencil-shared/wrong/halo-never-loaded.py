# expect: wrong
# family: mistake
"""A window sum with a halo: out[i] = a[i-3] + ... + a[i+3], through shared memory."""

import cupy as cp
import numpy as np

SOURCE = r"""
#define BLOCK 256
#define R 3

extern "C" __global__ void window_sum(const float* a, float* out, int n) {
    __shared__ float tile[BLOCK + 2 * R];
    int t = threadIdx.x;
    int i = blockIdx.x * BLOCK + t;
    tile[t + R] = i < n ? a[i] : 0.0f;
    // the halo is never loaded: tile[0..2] and tile[259..261] hold whatever was there
    __syncthreads();
    if (i < n) {
        float s = 0.0f;
        for (int k = 0; k < 2 * R + 1; ++k) s += tile[t + k];
        out[i] = s;
    }
}
"""

_kernel = cp.RawKernel(SOURCE, "window_sum")


def window_sum(a, out):
    n = a.size
    blocks = (n + 255) // 256
    _kernel((blocks,), (256,), (a, out, np.int32(n)))
