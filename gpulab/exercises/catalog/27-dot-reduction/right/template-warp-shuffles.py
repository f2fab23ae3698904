# why: warp shuffles in place of the shared tree (a shared slot per warp only), the block size a template parameter of a RawModule instantiated by name_expressions
"""Dot product: each warp sums with __shfl_down_sync, warp 0 sums the warps' totals, one atomic."""

import cupy as cp
import numpy as np

SOURCE = r"""
__device__ __forceinline__ float warp_sum(float v) {
    for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_down_sync(0xffffffffu, v, offset);
    return v;
}

template <int BLOCK>
__global__ void dot_t(const float* __restrict__ a, const float* __restrict__ b, float* out,
                      long long n) {
    __shared__ float warps[BLOCK / 32];
    float acc = 0.0f;
    for (long long i = (long long)blockIdx.x * BLOCK + threadIdx.x; i < n;
         i += (long long)BLOCK * gridDim.x) {
        acc += a[i] * b[i];
    }
    acc = warp_sum(acc);
    int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    if (lane == 0) warps[warp] = acc;
    __syncthreads();
    if (warp == 0) {
        float v = lane < BLOCK / 32 ? warps[lane] : 0.0f;
        v = warp_sum(v);
        if (lane == 0) atomicAdd(out, v);
    }
}
"""

BLOCK = 128
NAME = f"dot_t<{BLOCK}>"
_module = cp.RawModule(code=SOURCE, name_expressions=(NAME,))


def dot(a, b, out):
    n = a.size
    sms = cp.cuda.Device().attributes["MultiProcessorCount"]
    blocks = max(1, min(16 * sms, (n + BLOCK - 1) // BLOCK))
    out.fill(0)
    _module.get_function(NAME)((blocks,), (BLOCK,), (a, b, out, np.int64(n)))
