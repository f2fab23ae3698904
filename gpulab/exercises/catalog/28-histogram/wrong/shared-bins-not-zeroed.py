# expect: wrong
# family: mistake
# emulator-only: on a GPU, shared memory that is never written may hold zeros (a fresh SM) or what an earlier block left, so the answer is right on some runs (an H200 gave the right histogram at one seed of two); the emulator keeps shared arrays across blocks, so the bins always start with the last block's counts
"""Histogram of int32 values in [0, 256): one private histogram per block in shared memory."""

import cupy as cp
import numpy as np

SOURCE = r"""
#define BINS 256

extern "C" __global__ void histogram(const int* x, int* hist, long long n) {
    __shared__ int bins[BINS];
    int t = threadIdx.x;
    // the bins are not zeroed: they start with what the last block on this SM left
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
    hist.fill(0)
    _kernel((blocks,), (256,), (x, hist, np.int64(n)))
