# expect: a library kernel ran inside your call: Memcpy HtoD | Implicit conversion to a NumPy array
# family: escape
"""Shortcut: the window sum by NumPy on the host view (np.convolve), written with np.copyto; a kernel
of mine, handed a and out, swaps a value with its neighbour through shared memory and throws it away."""

import cupy as cp
import numpy as np

SOURCE = r"""
extern "C" __global__ void window_sum(const float* a, float* out, int n) {
    __shared__ float tile[256];
    int t = threadIdx.x;
    tile[t] = (float)t;
    __syncthreads();
    volatile float v = tile[(t + 1) % 256];
    (void)v;
}
"""
_kernel = cp.RawKernel(SOURCE, "window_sum")


def window_sum(a, out):
    h = np.asarray(a).astype(np.float64)
    c = np.concatenate([[0.0], np.cumsum(np.pad(h, 3))])
    s = c[7:] - c[:-7]
    np.copyto(out, s.astype(np.float32))
    _kernel(((a.size + 255) // 256,), (256,), (a, out, np.int32(a.size)))
