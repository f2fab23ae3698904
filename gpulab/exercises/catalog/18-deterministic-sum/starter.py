"""A float sum that gives the same bits on every run."""

import cupy as cp
import numpy as np

SOURCE = r"""
#define BLOCK 256
#define FULL 0xffffffffu

extern "C" __global__ void block_sums(const float* x, float* partial, long long n) {
    __shared__ float warp_totals[BLOCK / 32];
    int t = threadIdx.x, lane = t & 31, warp = t >> 5;
    // TODO: sum this block's share of x and write it to partial[blockIdx.x]: no atomics
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
    # TODO: turn the per-block sums into out[0], in an order that never changes
