# expect: uses the host's C++ standard library
# family: escape
# emulator-only: NVRTC has no std::copy, so on a GPU the file does not compile
"""Shortcut (the emulator's counting evaded): one thread per row, as wrong/rawkernel-serial-
row.py, but the row copied 64 floats at a time into a local buffer with `std::copy`, which the
emulator's kernels see through its runtime's own headers (<vector>, <functional>). For floats
the library copies with a memmove the instrumentation never counts, so the busiest thread read
as having touched nothing and the one-thread-a-row rule passed (`__builtin_bcopy` did the same).
The emulator's source scan now refuses `std::` and `namespace std` in kernel source, and the
host library's copying builtins (`__builtin_bcopy`, `__builtin_str...`)."""

import cupy as cp
import numpy as np

_k = cp.RawKernel(
    r"""
extern "C" __global__ void row_norms(const float* x, float* out, int rows, int cols) {
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows) return;
    const float* p = x + (long long)r * cols;
    float buf[64];
    float s = 0.0f;
    for (int c = 0; c < cols; c += 64) {
        int k = cols - c < 64 ? cols - c : 64;
        std::copy(p + c, p + c + k, &buf[0]);
        for (int j = 0; j < k; ++j) s += buf[j] * buf[j];
    }
    out[r] = sqrtf(s);
}""",
    "row_norms",
)


def row_norms(x, out):
    rows, cols = x.shape
    _k(((rows + 127) // 128,), (128,), (x, out, np.int32(rows), np.int32(cols)))
