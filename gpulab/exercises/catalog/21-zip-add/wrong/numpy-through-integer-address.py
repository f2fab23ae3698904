# expect: handed memory outside the device | host memory
# family: property-proxy
"""Shortcut (NumPy does the work on the host, the buffer handed over as a number): a kernel of
mine copies a and b into a plain NumPy buffer whose address it is given as an `unsigned long
long` (not an array argument, so the emulator's host-memory rule never looks at it), NumPy
computes |a - b| there, and a second kernel copies it into out."""

import cupy as cp
import numpy as np

SOURCE = r"""
extern "C" __global__ void abs_diff(const float* a, const float* b, unsigned long long host, int n) {
    float* h = (float*)host;
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) { h[i] = a[i]; h[n + i] = b[i]; }
}
extern "C" __global__ void back(unsigned long long host, float* out, int n) {
    const float* h = (const float*)host;
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = h[i];
}
"""
_m = cp.RawModule(code=SOURCE)
_in, _out = _m.get_function("abs_diff"), _m.get_function("back")


def abs_diff(a, b, out):
    n = a.size
    g = ((n + 255) // 256,)
    host = np.empty(2 * n, dtype=np.float32)
    _in(g, (256,), (a, b, np.uint64(host.__array_interface__["data"][0]), np.int32(n)))
    res = np.abs(host[:n] - host[n:])
    _out(g, (256,), (np.uint64(res.__array_interface__["data"][0]), out, np.int32(n)))
