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
    if (t < R) {
        int left = i - R, right = i + BLOCK;
        tile[t] = left >= 0 && left < n ? a[left] : 0.0f;
        tile[t + BLOCK + R] = right < n ? a[right] : 0.0f;
    }
    __syncthreads();
    if (i < n) {
        float s = 0.0f;
        for (int k = 0; k < 2 * R; ++k)  /* one short: misses a[i + 3] */ s += tile[t + k];
        out[i] = s;
    }
}
"""

_kernel = cp.RawKernel(SOURCE, "window_sum")


def window_sum(a, out):
    n = a.size
    blocks = (n + 255) // 256
    _kernel((blocks,), (256,), (a, out, np.int32(n)))
