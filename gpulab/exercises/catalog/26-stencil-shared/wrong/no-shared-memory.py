# expect: uses no shared memory
# family: loose-property
"""Wrong here: a correct window sum straight from global memory. Each input is fetched by 7
threads (the caches serve most of them); this exercise is the tile in shared memory."""

import cupy as cp
import numpy as np

SOURCE = r"""
#define R 3

extern "C" __global__ void window_sum(const float* a, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float s = 0.0f;
        for (int j = i - R; j <= i + R; ++j) {
            if (j >= 0 && j < n) s += a[j];
        }
        out[i] = s;
    }
}
"""

_kernel = cp.RawKernel(SOURCE, "window_sum")


def window_sum(a, out):
    n = a.size
    blocks = (n + 255) // 256
    _kernel((blocks,), (256,), (a, out, np.int32(n)))
