# why: a RawModule holding a C++ template, instantiated through name_expressions, 128-thread blocks and an int index
"""saxpy from a templated kernel in a RawModule: the function is fetched by its instantiation."""

import cupy as cp
import numpy as np

SOURCE = r"""
template <typename T>
__global__ void saxpy_t(T a, const T* x, const T* y, T* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;  // an early return in place of a guarded block
    out[i] = a * x[i] + y[i];
}
"""

NAME = "saxpy_t<float>"
_module = cp.RawModule(code=SOURCE, options=("-std=c++14",), name_expressions=(NAME,))
THREADS = 128


def saxpy(a, x, y, out):
    n = x.size
    kernel = _module.get_function(NAME)
    kernel(((n + THREADS - 1) // THREADS,), (THREADS,), (np.float32(a), x, y, out, np.int32(n)))
