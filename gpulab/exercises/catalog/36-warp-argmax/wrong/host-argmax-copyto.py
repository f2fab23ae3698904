# expect: a library kernel ran inside your call: Memcpy HtoD | Implicit conversion to a NumPy array
# family: escape
"""Shortcut: np.argmax on the host view of x, written with np.copyto; a kernel of mine, handed x,
shuffles a constant once (so 'a launch handed x shuffles') and writes nothing."""

import cupy as cp
import numpy as np

SOURCE = r"""
extern "C" __global__ void warp_argmax_k(const float* x, long long* out, int n) {
    float v = __shfl_down_sync(0xffffffffu, (float)threadIdx.x, 1);
    (void)v;
}
"""
_kernel = cp.RawKernel(SOURCE, "warp_argmax_k")


def warp_argmax(x, out):
    np.copyto(out, np.array([np.argmax(np.asarray(x))], dtype=np.int64))
    _kernel((1,), (32,), (x, out, np.int32(x.size)))
