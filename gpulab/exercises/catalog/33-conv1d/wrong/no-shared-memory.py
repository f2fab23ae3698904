# expect: uses no shared memory
# family: loose-property
"""Wrong here: a correct convolution straight from global memory, each input fetched by K
threads and every weight by every thread; this exercise is the tile and the weights in shared
memory."""

import cupy as cp
import numpy as np

SOURCE = r"""
extern "C" __global__ void conv1d(const float* x, const float* w, float* out, int n, int K) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int R = (K - 1) / 2;
    if (i < n) {
        float s = 0.0f;
        for (int k = 0; k < K; ++k) {
            int j = i + k - R;
            if (j >= 0 && j < n) s += w[k] * x[j];
        }
        out[i] = s;
    }
}
"""

_kernel = cp.RawKernel(SOURCE, "conv1d")


def conv1d(x, w, out):
    n, k = x.size, w.size
    blocks = (n + 255) // 256
    _kernel((blocks,), (256,), (x, w, out, np.int32(n), np.int32(k)))
