"""A sum with the same bits every run: per-block sums in fixed slots, then one block adds them
in index order. No atomics, so no order left to chance."""

import cupy as cp
import numpy as np

SOURCE = r"""
#define BLOCK 256
#define FULL 0xffffffffu

extern "C" __global__ void block_sums(const float* x, float* partial, long long n) {
    __shared__ float warp_totals[BLOCK / 32];
    int t = threadIdx.x, lane = t & 31, warp = t >> 5;
    float v = 0.0f;
    long long stride = (long long)BLOCK * gridDim.x;
    for (long long i = (long long)blockIdx.x * BLOCK + t; i < n; i += stride) v += x[i];
    for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_down_sync(FULL, v, offset);
    if (lane == 0) warp_totals[warp] = v;
    __syncthreads();
    if (warp == 0) {
        v = lane < BLOCK / 32 ? warp_totals[lane] : 0.0f;
        for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_down_sync(FULL, v, offset);
        if (lane == 0) partial[blockIdx.x] = v;  // a fixed slot per block
    }
}
"""

_kernel = cp.RawModule(code=SOURCE).get_function("block_sums")


_sms = {}
_partials = {}


def _sm_count():
    # Device.attributes asks the driver for ~100 figures: once per device, not once per call
    dev = cp.cuda.Device().id
    if dev not in _sms:
        _sms[dev] = cp.cuda.Device(dev).attributes["MultiProcessorCount"]
    return _sms[dev]


def det_sum(x, out):
    n = x.size
    sms = _sm_count()
    blocks = max(1, min(8 * sms, (n + 255) // 256))
    partial = _partials.get((cp.cuda.Device().id, blocks))
    if partial is None:  # reused: no allocation in the timed path
        partial = _partials[(cp.cuda.Device().id, blocks)] = cp.empty(blocks, dtype=cp.float32)
    _kernel((blocks,), (256,), (x, partial, np.int64(n)))
    _kernel((1,), (256,), (partial, out, np.int64(blocks)))  # one block, always the same order
