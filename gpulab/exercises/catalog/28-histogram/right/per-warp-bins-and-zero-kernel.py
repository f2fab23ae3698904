# why: a private histogram per warp (8 x 256 shared counters, fewer collisions than one per block), and hist zeroed by a kernel of the learner's (two launches)
"""Histogram with a shared histogram per warp, merged into hist; hist cleared by its own launch."""

import cupy as cp
import numpy as np

SOURCE = r"""
#define BINS 256
#define WARPS 8

extern "C" __global__ void zero_bins(int* hist) {
    hist[threadIdx.x] = 0;
}

extern "C" __global__ void histogram_warps(const int* x, int* hist, long long n) {
    __shared__ unsigned int bins[WARPS][BINS];
    int t = threadIdx.x, warp = t / 32;
    for (int k = t; k < WARPS * BINS; k += blockDim.x) bins[k / BINS][k % BINS] = 0;
    __syncthreads();
    for (long long i = (long long)blockIdx.x * blockDim.x + t; i < n;
         i += (long long)blockDim.x * gridDim.x) {
        atomicAdd(&bins[warp][x[i]], 1u);
    }
    __syncthreads();
    for (int b = t; b < BINS; b += blockDim.x) {
        unsigned int total = 0;
        for (int w = 0; w < WARPS; ++w) total += bins[w][b];
        if (total) atomicAdd(&hist[b], (int)total);
    }
}
"""

_module = cp.RawModule(code=SOURCE)


def histogram(x, hist):
    n = x.size
    blocks = max(1, min(512, (n + 255) // 256))
    _module.get_function("zero_bins")((1,), (256,), (hist,))
    _module.get_function("histogram_warps")((blocks,), (256,), (x, hist, np.int64(n)))
