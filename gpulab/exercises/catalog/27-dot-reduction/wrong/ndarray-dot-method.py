# expect: a library kernel ran inside your call: cupy_dot
# family: library
"""Shortcut (a library does the work): `a.dot(b)`, the array's own method, finds the sum, and a
kernel of the learner's (handed a and b, with a shared array it syncs on) only writes the number
it is handed. On a GPU CuPy's dot is cuBLAS's kernel, which the trace names; the emulator's fake
recorded NumPy's ufuncs and functions but not its methods that compute past them (`dot`,
`argmax`, `take`, ...), so the file passed there. The fake now records each as CuPy's kernel."""

import cupy as cp
import numpy as np

_kernel = cp.RawKernel(
    r"""
extern "C" __global__ void dot(const float* a, const float* b, float* out, float value) {
    __shared__ float s[256];
    s[threadIdx.x] = threadIdx.x < 1 ? a[0] * 0.0f + b[0] * 0.0f : 0.0f;
    __syncthreads();
    if (threadIdx.x == 0) out[0] = value + s[1];
}""",
    "dot",
)


def dot(a, b, out):
    value = np.float32(float(a.dot(b)))
    _kernel((1,), (256,), (a, b, out, value))
