# expect: same bits every run
# family: mistake
"""Wrong: each block's float32 sum goes into a double with atomicAdd. On inputs of similar sizes
the double sum of a few hundred float32 partials is exact in any order, so the bits repeat; but
the order of the additions is still the scheduler's, and partials of very different sizes that
cancel (a block holding 1e18 beside blocks holding 1) round differently in each order."""

import cupy as cp
import numpy as np

SOURCE = r"""
#define BLOCK 256
#define FULL 0xffffffffu

extern "C" __global__ void into_double(const float* x, double* acc, long long n) {
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
        if (lane == 0) atomicAdd(acc, (double)v);  // 53 bits: "exact enough", in any order?
    }
}

extern "C" __global__ void to_float(const double* acc, float* out) {
    if (threadIdx.x == 0 && blockIdx.x == 0) out[0] = (float)acc[0];
}
"""

_module = cp.RawModule(code=SOURCE)
_into_double = _module.get_function("into_double")
_to_float = _module.get_function("to_float")
_acc = {}


def det_sum(x, out):
    n = x.size
    sms = cp.cuda.Device().attributes["MultiProcessorCount"]
    blocks = max(1, min(8 * sms, (n + 255) // 256))
    acc = _acc.get(cp.cuda.Device().id)
    if acc is None:
        acc = _acc[cp.cuda.Device().id] = cp.zeros(1, dtype=cp.float64)
    acc.fill(0)
    _into_double((blocks,), (256,), (x, acc, np.int64(n)))
    _to_float((1,), (1,), (acc, out))
