# expect: has no warp shuffle that runs
# family: property-proxy
"""Shortcut (a red team's, 2026-11-30; passed on the emulator before the rule): as
search-handed-an-address.py, with x's address handed to the search as a float64 (exact below
2**53) and cast back to a pointer in the kernel, so a rule that read only integer arguments as
addresses missed it; no shuffle, a packed-key atomicMax, while a one-warp decoy shuffles."""

import cupy as cp
import numpy as np

SRC = r"""
extern "C" __global__ void decoy(const float* x, float* sink, long long n) {
    float v = threadIdx.x < n ? x[threadIdx.x] : -1e30f;
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_down_sync(0xffffffffu, v, o));
    if (threadIdx.x == 0) sink[0] = v;
}
extern "C" __global__ void search(double xp, unsigned long long* key, long long n) {
    const float* x = (const float*)(unsigned long long)xp;
    long long step = (long long)blockDim.x * gridDim.x;
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += step) {
        unsigned int b = __float_as_uint(x[i]);
        b = (b & 0x80000000u) ? ~b : (b | 0x80000000u);
        unsigned long long k = ((unsigned long long)b << 32) | (0xffffffffu - (unsigned int)i);
        atomicMax(key, k);
    }
}
extern "C" __global__ void finish(const unsigned long long* key, long long* out) {
    out[0] = (long long)(0xffffffffu - (unsigned int)(key[0] & 0xffffffffu));
}
"""
_m = cp.RawModule(code=SRC)
_decoy, _search, _finish = (_m.get_function(k) for k in ("decoy", "search", "finish"))


def warp_argmax(x, out):
    n = x.size
    d = x.data
    ptr = d.ptr if hasattr(d, "ptr") else x.__array_interface__["data"][0]
    key = cp.zeros(1, dtype=cp.uint64)
    sink = cp.empty(1, dtype=cp.float32)
    _decoy((1,), (32,), (x, sink, np.int64(n)))
    _search((min(1024, (n + 255) // 256),), (256,), (np.float64(ptr), key, np.int64(n)))
    _finish((1,), (1,), (key, out))
