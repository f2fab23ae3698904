# expect: the values are read from global memory instead
# family: property-proxy
# emulator-only: on a GPU the compiled code shows shared memory read across threads; how many shared accesses a launch made needs Nsight Compute's counters
"""Shortcut (property faked): the convolution from global memory (K loads of x and of w an output), each block's results passed through a shared array and written by the neighbouring thread (reversed within the block): shared memory used and shared, no input reused from it."""

import cupy as cp
import numpy as np

SOURCE = r"""
extern "C" __global__ void conv1d(const float* x, const float* w, float* out, int n, int k) {
    __shared__ float res[256];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int r = (k - 1) / 2;
    float acc = 0.0f;
    if (i < n)
        for (int j = 0; j < k; ++j) {
            int p = i - r + j;
            if (p >= 0 && p < n) acc += w[j] * x[p];
        }
    res[threadIdx.x] = acc;
    __syncthreads();
    int t = blockDim.x - 1 - threadIdx.x;
    int o = blockIdx.x * blockDim.x + t;
    if (o < n) out[o] = res[t];
}
"""
_kernel = cp.RawKernel(SOURCE, "conv1d")


def conv1d(x, w, out):
    n = x.size
    _kernel(((n + 255) // 256,), (256,), (x, w, out, np.int32(n), np.int32(w.size)))
