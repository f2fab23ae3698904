# expect: wrong
# family: mistake
"""Histogram of int32 values in [0, 256): one private histogram per block in shared memory."""

import cupy as cp
import numpy as np

SOURCE = r"""
#define BINS 256

extern "C" __global__ void histogram(const int* x, int* hist, long long n) {
    __shared__ int bins[BINS];
    int t = threadIdx.x;
    for (int b = t; b < BINS; b += blockDim.x) bins[b] = 0;
    __syncthreads();
    long long stride = (long long)blockDim.x * gridDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + t; i < n; i += stride) {
        atomicAdd(&bins[x[i]], 1);
    }
    __syncthreads();
    for (int b = t; b < BINS; b += blockDim.x) {
        if (bins[b] != 0) atomicAdd(&hist[b], bins[b]);
    }
}
"""

_kernel = cp.RawKernel(SOURCE, "histogram")


def histogram(x, hist):
    n = x.size
    sms = cp.cuda.Device().attributes["MultiProcessorCount"]
    blocks = max(1, min(8 * sms, (n + 255) // 256))
    # hist is not zeroed: counts are added to the sentinel
    _kernel((blocks,), (256,), (x, hist, np.int64(n)))
