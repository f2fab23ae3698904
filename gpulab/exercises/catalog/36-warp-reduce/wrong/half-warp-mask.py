# expect: out[0]
"""Wrong: the mask and the offsets cover lanes 0-15 only (0x0000ffff, width 16, offsets 8..1). Every shuffle
is well-defined, and lanes 16-31's values are never added: the mask must name every lane whose
value the sum needs."""

import cupy as cp
import numpy as np

SOURCE = r"""
#define BLOCK 256
#define FULL 0xffffffffu

extern "C" __global__ void warp_sum(const float* x, float* out, long long n) {
    __shared__ float warp_totals[BLOCK / 32];
    int t = threadIdx.x, lane = t & 31, warp = t >> 5;
    float v = 0.0f;
    long long stride = (long long)BLOCK * gridDim.x;
    for (long long i = (long long)blockIdx.x * BLOCK + t; i < n; i += stride) v += x[i];
    if (lane < 16) {  // half a warp, with a mask to match
        for (int offset = 8; offset > 0; offset >>= 1) v += __shfl_down_sync(0xffffu, v, offset, 16);
    }
    if (lane == 0) warp_totals[warp] = v;
    __syncthreads();
    if (warp == 0) {
        v = lane < BLOCK / 32 ? warp_totals[lane] : 0.0f;
        for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_down_sync(FULL, v, offset);
        if (lane == 0) atomicAdd(out, v);
    }
}
"""

_kernel = cp.RawKernel(SOURCE, "warp_sum")


def warp_sum(x, out):
    n = x.size
    sms = cp.cuda.Device().attributes["MultiProcessorCount"]
    blocks = max(1, min(8 * sms, (n + 255) // 256))
    out.fill(0)
    _kernel((blocks,), (256,), (x, out, np.int64(n)))
