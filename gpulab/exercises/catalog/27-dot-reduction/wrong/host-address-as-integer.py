# expect: handed memory outside the device | on the host | host memory
# family: property-proxy
"""Shortcut (work done on the host, handed over as a number): like wrong/host-through-mapped-
memory, but the host buffer reaches the kernels as a 64-bit integer parameter (`unsigned long
long`, cast to a pointer inside), not as an array. The host-memory rule looks at array arguments
on the emulator and asks the driver about integers only on a real GPU; the emulator's memory check
lets any address outside the arguments' guard zones through. A kernel ferries a and b into a
plain NumPy buffer, NumPy computes the dot, and a second kernel copies the answer into out."""

import cupy as cp
import numpy as np

SOURCE = r"""
extern "C" __global__ void ferry_in(const float* a, const float* b, unsigned long long host,
                                    long long n) {
    float* h = (float*)host;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (long long)gridDim.x * blockDim.x) {
        h[i] = a[i];
        h[n + i] = b[i];
    }
}
extern "C" __global__ void ferry_out(unsigned long long host, float* out) {
    if (threadIdx.x == 0 && blockIdx.x == 0) out[0] = *(const float*)host;
}
"""

_mod = cp.RawModule(code=SOURCE)
_in = _mod.get_function("ferry_in")
_out = _mod.get_function("ferry_out")


def dot(a, b, out):
    n = a.size
    host = np.empty(2 * n + 1, dtype=np.float32)
    addr = np.uint64(host.__array_interface__["data"][0])
    _in((64,), (256,), (a, b, addr, np.int64(n)))
    host[2 * n] = np.dot(host[:n].astype(np.float64), host[n : 2 * n].astype(np.float64))
    _out((1,), (1,), (np.uint64(host[2 * n :].__array_interface__["data"][0]), out))
