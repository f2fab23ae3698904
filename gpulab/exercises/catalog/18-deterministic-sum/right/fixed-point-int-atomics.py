# why: block partials as two int64 fixed-point words added with integer atomics (order-free)
"""Correct: each block's double partial (fixed in-block order) is split into two int64 fixed-point
words and added with integer atomicAdd: integer addition is associative, so any block order
gives the same bits; one thread of a second launch turns the two words back into a float."""

import cupy as cp
import numpy as np

SOURCE = r"""
#define BLOCK 256
#define FULL 0xffffffffu

extern "C" __global__ void fixed_sums(const float* x, unsigned long long* acc, long long n) {
    __shared__ double warp_totals[BLOCK / 32];
    int t = threadIdx.x, lane = t & 31, warp = t >> 5;
    double v = 0.0;
    long long stride = (long long)BLOCK * gridDim.x;
    for (long long i = (long long)blockIdx.x * BLOCK + t; i < n; i += stride) v += (double)x[i];
    for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_down_sync(FULL, v, offset);
    if (lane == 0) warp_totals[warp] = v;
    __syncthreads();
    if (t == 0) {
        double p = 0.0;
        for (int w = 0; w < BLOCK / 32; ++w) p += warp_totals[w];
        double hi = floor(p / 4294967296.0);               // p = hi * 2^32 + rest, rest in [0, 2^32)
        double rest = p - hi * 4294967296.0;
        long long h = (long long)hi;
        unsigned long long lo = (unsigned long long)llrint(rest * 16777216.0);  // 2^-24 units
        atomicAdd(&acc[0], (unsigned long long)h);           // two's complement: wraps correctly
        atomicAdd(&acc[1], lo);
    }
}

extern "C" __global__ void finish(const unsigned long long* acc, float* out) {
    if (threadIdx.x == 0 && blockIdx.x == 0) {
        long long h = (long long)acc[0];
        double s = (double)h * 4294967296.0 + (double)acc[1] / 16777216.0;
        out[0] = (float)s;
    }
}
"""

_mod = cp.RawModule(code=SOURCE)
_sums = _mod.get_function("fixed_sums")
_finish = _mod.get_function("finish")


def det_sum(x, out):
    n = x.size
    blocks = max(1, min(256, (n + 255) // 256))
    acc = cp.zeros(2, dtype=cp.uint64)
    _sums((blocks,), (256,), (x, acc, np.int64(n)))
    _finish((1,), (32,), (acc, out))
