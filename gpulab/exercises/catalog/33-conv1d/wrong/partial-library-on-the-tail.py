# expect: ran inside your call
# family: library
"""Shortcut (a half-and-half decoy): a tiled kernel of the learner's on the first block of out, and cupyx's correlate1d on the rest (a slice of the whole result copied into out)."""

import cupy as cp
import cupyx.scipy.ndimage as ndi
import numpy as np

SOURCE = r"""
extern "C" __global__ void conv1d(const float* x, const float* w, float* out, int n, int k, int m) {
    __shared__ float ws[64];
    int r = (k - 1) / 2;
    if (threadIdx.x < k) ws[threadIdx.x] = w[threadIdx.x];
    __syncthreads();
    int i = threadIdx.x;
    if (i >= m) return;
    float acc = 0.0f;
    for (int j = 0; j < k; ++j) {
        int p = i - r + j;
        if (p >= 0 && p < n) acc += ws[j] * x[p];
    }
    out[i] = acc;
}
"""
_kernel = cp.RawKernel(SOURCE, "conv1d")


def conv1d(x, w, out):
    n = x.size
    m = min(n, 256)
    _kernel((1,), (256,), (x, w, out, np.int32(n), np.int32(w.size), np.int32(m)))
    if n > m:
        out[m:] = ndi.correlate1d(x, w, mode="constant")[m:]
