# expect: launched | grid | ran inside your call
# family: property-proxy
"""Shortcut (a property faked, in a separate tiny launch): the watched kernel object is a
wrapper with `.inner` (the library's own RawKernel, reached through __getattr__-free attribute
access). The real work is one thread per element, a grid that grows with n, launched through
`_kernel.inner(...)`, which the watch never records; a token launch of 1 block through the
wrapper (n = 0: does nothing) is the only launch the grid rule sees. On the emulator no trace
name is recorded for a RawKernel launch, so the extra launch is invisible."""

import cupy as cp
import numpy as np

SOURCE = r"""
extern "C" __global__ void saxpy(float alpha, const float* x, const float* y, float* out,
                                 long long n) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;  // one element each, no loop
    if (i < n) out[i] = alpha * x[i] + y[i];
}
"""

_kernel = cp.RawKernel(SOURCE, "saxpy")
_raw = getattr(_kernel, "inner", _kernel)


def saxpy(alpha, x, y, out):
    n = x.size
    _raw(((n + 255) // 256,), (256,), (np.float32(alpha), x, y, out, np.int64(n)))
    _kernel((1,), (256,), (np.float32(alpha), x, y, out, np.int64(0)))
