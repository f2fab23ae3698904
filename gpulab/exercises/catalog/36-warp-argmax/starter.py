"""Argmax with warp shuffles: out[0] = the index of the largest value (the first one on a tie)."""

import cupy as cp
import numpy as np

SOURCE = r"""
#define BLOCK 256
#define FULL 0xffffffffu
#define NO_INDEX 0x7fffffffffffffffLL  // past every index

// First pass (given = 0): the pairs are (vals[i], i). Second (given = 1): (vals[i], idx[i]),
// the blocks' best pairs. Each block leaves its best in best_val/best_idx[blockIdx.x].
extern "C" __global__ void argmax_pass(const float* vals, const long long* idx, int given,
                                       long long n, float* best_val, long long* best_idx) {
    __shared__ float warp_val[BLOCK / 32];
    __shared__ long long warp_idx[BLOCK / 32];
    int t = threadIdx.x, lane = t & 31, warp = t >> 5;
    // TODO: each thread keeps its best (value, index) pair over a grid-stride loop; each warp
    //       combines its 32 pairs with __shfl_down_sync (a value and an index move at each
    //       step); lane 0 of each warp leaves its pair in warp_val/warp_idx; after a barrier
    //       the first warp combines those, and lane 0 writes the block's pair
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
