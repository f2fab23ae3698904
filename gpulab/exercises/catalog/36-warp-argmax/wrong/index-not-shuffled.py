# expect: expected
# family: mistake
"""Honest mistake: only the value moves through the shuffles. Each lane keeps its own index, so
lane 0 ends with the warp's largest value beside the index of lane 0's own best."""

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
        if (ov > v) v = ov;  // the index stays behind
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
_state = {}  # per device: the SM count and the blocks' pairs


def _scratch():
    # Device.attributes asks the driver for ~100 figures: once per device, not once per call
    dev = cp.cuda.Device().id
    if dev not in _state:
        sms = cp.cuda.Device(dev).attributes["MultiProcessorCount"]
        blocks = 8 * sms
        _state[dev] = (sms, cp.empty(blocks, dtype=cp.float32), cp.empty(blocks, dtype=cp.int64))
    return _state[dev]


def warp_argmax(x, out):
    n = x.size
    sms, vals, idx = _scratch()
    blocks = max(1, min(8 * sms, (n + 255) // 256))
    _kernel((blocks,), (256,), (x, idx, np.int32(0), np.int64(n), vals, idx))
    # one block reduces the blocks' pairs; its best index goes straight to out[0]
    _kernel((1,), (256,), (vals, idx, np.int32(1), np.int64(blocks), vals, out))
