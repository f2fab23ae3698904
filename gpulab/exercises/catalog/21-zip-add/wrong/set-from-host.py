# expect: Memcpy
# family: escape
"""Shortcut (work done elsewhere): NumPy computes |a - b| on host copies, and CuPy's
`ndarray.set` copies the answer into out, beside a kernel of mine that writes one element. Both
copies are inside the call, where the kernel trace sees them, on a GPU and on the emulator."""

import cupy as cp
import numpy as np

_k = cp.RawKernel(
    r"""
extern "C" __global__ void touch(const float* a, float* out) {
    if (blockIdx.x == 0 && threadIdx.x == 0) out[0] = fabsf(a[0]) * 0.0f + out[0];
}""",
    "touch",
)


def abs_diff(a, b, out):
    out.set(np.abs(a.get() - b.get()))
    _k((1,), (32,), (a, out))
