# expect: has no warp shuffle that runs
# family: property-proxy
"""Shortcut: the launch handed x only copies it to a scratch buffer, each value passed through
__shfl_xor_sync(FULL, v, 0) (a shuffle that runs and whose value is used, but moves nothing
between lanes); a second launch, one thread, walks the copy for the argmax."""

import cupy as cp
import numpy as np

SOURCE = r"""
extern "C" __global__ void copy_through(const float* x, float* s, long long n) {
    long long T = (long long)gridDim.x * blockDim.x;
    long long i0 = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    long long rounds = (n + T - 1) / T;
    for (long long k = 0; k < rounds; ++k) {
        long long i = i0 + k * T;
        float v = i < n ? x[i] : 0.0f;
        v = __shfl_xor_sync(0xffffffffu, v, 0);
        if (i < n) s[i] = v;
    }
}
extern "C" __global__ void walk(const float* s, long long* out, long long n) {
    if (blockIdx.x == 0 && threadIdx.x == 0) {
        long long best = 0;
        for (long long i = 1; i < n; ++i) if (s[i] > s[best]) best = i;
        out[0] = best;
    }
}
"""
_m = cp.RawModule(code=SOURCE)
_copy = _m.get_function("copy_through")
_walk = _m.get_function("walk")


def warp_argmax(x, out):
    n = x.size
    s = cp.empty_like(x)
    blocks = max(1, min(64, (n + 255) // 256))
    _copy((blocks,), (256,), (x, s, np.int64(n)))
    _walk((1,), (32,), (s, out, np.int64(n)))
