# expect: has no warp shuffle
# family: property-proxy
"""Shortcut (a property faked in the source): a warp-shuffle helper sits in the file, never
called, beside a kernel in which one thread per block walks its share in a loop. The source
names __shfl_down_sync; the compiled kernel holds no shuffle instruction."""

import cupy as cp
import numpy as np

SOURCE = r"""
#define BLOCK 256
#define FULL 0xffffffffu

__device__ __forceinline__ void take_better(float& v, long long& k, float ov, long long ok) {
    if (ov > v || (ov == v && ok < k)) { v = ov; k = ok; }
}

__device__ void warp_best(float& v, long long& k) {
    for (int offset = 16; offset > 0; offset >>= 1) {
        float ov = __shfl_down_sync(FULL, v, offset);
        long long ok = __shfl_down_sync(FULL, k, offset);
        take_better(v, k, ov, ok);
    }
}

extern "C" __global__ void argmax_pass(const float* vals, const long long* idx, int given,
                                       long long n, float* best_val, long long* best_idx) {
    if (threadIdx.x != 0) return;
    float v = __int_as_float(0xff800000);
    long long k = 0x7fffffffffffffffLL;
    for (long long i = blockIdx.x; i < n; i += gridDim.x)
        take_better(v, k, vals[i], given ? idx[i] : i);
    best_val[blockIdx.x] = v;
    best_idx[blockIdx.x] = k;
}
"""

_kernel = cp.RawKernel(SOURCE, "argmax_pass")
_state = {}


def _scratch():
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
    _kernel((1,), (256,), (vals, idx, np.int32(1), np.int64(blocks), vals, out))
