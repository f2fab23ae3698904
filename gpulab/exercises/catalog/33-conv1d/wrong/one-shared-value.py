# expect: the values are read from global memory instead
# family: property-proxy
# emulator-only: on a GPU the compiled code shows shared memory read across threads; how many shared accesses a launch made needs Nsight Compute's counters
"""Shortcut (property faked): thread 0 puts the filter's radius in shared memory and every thread reads it back after a barrier (shared memory used, and shared), then the convolution straight from global memory: K loads of x and K of w an output, no tile."""

import cupy as cp
import numpy as np

SOURCE = r"""
extern "C" __global__ void conv1d(const float* x, const float* w, float* out, int n, int k) {
    __shared__ int radius;
    if (threadIdx.x == 0) radius = (k - 1) / 2;
    __syncthreads();
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float acc = 0.0f;
    for (int j = 0; j < k; ++j) {
        int p = i - radius + j;
        if (p >= 0 && p < n) acc += w[j] * x[p];
    }
    out[i] = acc;
}
"""
_kernel = cp.RawKernel(SOURCE, "conv1d")


def conv1d(x, w, out):
    n = x.size
    _kernel(((n + 255) // 256,), (256,), (x, w, out, np.int32(n), np.int32(w.size)))
