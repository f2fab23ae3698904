# expect: ran inside your call
# family: library
"""Shortcut (a library does the work, behind a decoy): the learner's shuffle kernel runs on the
first 256 elements, so a kernel of theirs is seen in every call; cupy.argmax does the rest."""

import cupy as cp
import numpy as np

SOURCE = r"""
#define BLOCK 256
#define FULL 0xffffffffu
#define NO_INDEX 0x7fffffffffffffffLL  // past every index: any index beats it on a tie

// (ov, ok) beats (v, k): a larger value, or the same value at a smaller index. One rule,
// whichever order pairs meet in, so the first largest value wins however the blocks run.
__device__ __forceinline__ void take_better(float& v, long long& k, float ov, long long ok) {
    if (ov > v || (ov == v && ok < k)) { v = ov; k = ok; }
}

__device__ __forceinline__ void warp_best(float& v, long long& k) {
    for (int offset = 16; offset > 0; offset >>= 1) {
        float ov = __shfl_down_sync(FULL, v, offset);
        long long ok = __shfl_down_sync(FULL, k, offset);
        take_better(v, k, ov, ok);
    }
}

// First pass (given = 0): the pairs are (vals[i], i). Second (given = 1): (vals[i], idx[i]),
// the blocks' best pairs. Each block leaves its best in best_val/best_idx[blockIdx.x].
extern "C" __global__ void argmax_pass(const float* vals, const long long* idx, int given,
                                       long long n, float* best_val, long long* best_idx) {
    __shared__ float warp_val[BLOCK / 32];
    __shared__ long long warp_idx[BLOCK / 32];
    int t = threadIdx.x, lane = t & 31, warp = t >> 5;
    float v = __int_as_float(0xff800000);  // -inf: every value beats it
    long long k = NO_INDEX;
    long long stride = (long long)BLOCK * gridDim.x;
    for (long long i = (long long)blockIdx.x * BLOCK + t; i < n; i += stride)
        take_better(v, k, vals[i], given ? idx[i] : i);
    warp_best(v, k);  // every lane reaches it: lanes with nothing bring (-inf, NO_INDEX)
    if (lane == 0) { warp_val[warp] = v; warp_idx[warp] = k; }
    __syncthreads();
    if (warp == 0) {
        v = lane < BLOCK / 32 ? warp_val[lane] : __int_as_float(0xff800000);
        k = lane < BLOCK / 32 ? warp_idx[lane] : NO_INDEX;
        warp_best(v, k);
        if (lane == 0) { best_val[blockIdx.x] = v; best_idx[blockIdx.x] = k; }
    }
}
"""

_kernel = cp.RawKernel(SOURCE, "argmax_pass")


def warp_argmax(x, out):
    vals, idx = cp.empty(1, dtype=cp.float32), cp.empty(1, dtype=cp.int64)
    m = min(256, x.size)
    _kernel((1,), (256,), (x, idx, np.int32(0), np.int64(m), vals, idx))
    if x.size > m:
        rest = int(cp.argmax(x[m:])) + m
        if x[rest] > vals[0] or (x[rest] == vals[0] and rest < int(idx[0])):
            idx[0] = rest
    out[...] = idx
