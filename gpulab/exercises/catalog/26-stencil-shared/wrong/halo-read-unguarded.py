# expect: a read before its start or past its end
# family: mistake
"""Wrong: the halo is loaded without its bounds check, so the first block reads 3 values before
the start of a and the last block reads past its end (instead of using 0 there). On a GPU such a
read rarely faults: it returns whatever lies there, here the check's guard values."""

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
        tile[t] = a[i - R];                  // i - R < 0 in the first block
        tile[t + BLOCK + R] = a[i + BLOCK];  // past the end in the last block
    }
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
