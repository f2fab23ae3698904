# why: no global atomics: each block writes its whole private histogram to a scratch row, and a second kernel sums each bin down the rows (one thread a bin)
"""Histogram in two passes: per-block histograms in a (blocks, 256) scratch array, then summed."""

import cupy as cp
import numpy as np

SOURCE = r"""
#define BINS 256

extern "C" __global__ void block_hist(const int* x, int* partial, long long n) {
    __shared__ int bins[BINS];
    int t = threadIdx.x;
    for (int b = t; b < BINS; b += blockDim.x) bins[b] = 0;
    __syncthreads();
    for (long long i = (long long)blockIdx.x * blockDim.x + t; i < n;
         i += (long long)blockDim.x * gridDim.x) {
        atomicAdd(&bins[x[i]], 1);
    }
    __syncthreads();
    for (int b = t; b < BINS; b += blockDim.x) partial[(long long)blockIdx.x * BINS + b] = bins[b];
}

extern "C" __global__ void sum_rows(const int* partial, int* hist, int rows) {
    int b = threadIdx.x;
    int total = 0;
    for (int r = 0; r < rows; ++r) total += partial[(long long)r * BINS + b];
    hist[b] = total;
}
"""

_module = cp.RawModule(code=SOURCE)


def histogram(x, hist):
    n = x.size
    blocks = max(1, min(256, (n + 511) // 512))
    partial = cp.empty((blocks, 256), dtype=cp.int32)
    _module.get_function("block_hist")((blocks,), (512,), (x, partial, np.int64(n)))
    _module.get_function("sum_rows")((1,), (256,), (partial, hist, np.int32(blocks)))
