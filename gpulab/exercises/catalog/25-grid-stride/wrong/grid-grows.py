# expect: this exercise fixes the grid at
# family: mistake
"""Wrong: the grid-stride loop is right, but the wrapper launches ceil(n / 256) blocks, one
thread per element as in the first exercises: the loop never takes a second step, and the grid
grows with n, which is what this exercise is about not doing."""

import cupy as cp
import numpy as np

SOURCE = r"""
extern "C" __global__ void saxpy(float alpha, const float* x, const float* y, float* out,
                                 long long n) {
    long long stride = (long long)blockDim.x * gridDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        out[i] = alpha * x[i] + y[i];
    }
}
"""

_kernel = cp.RawKernel(SOURCE, "saxpy")


def saxpy(alpha, x, y, out):
    n = x.size
    threads = 256
    blocks = (n + threads - 1) // threads  # grows with n
    _kernel((blocks,), (threads,), (np.float32(alpha), x, y, out, np.int64(n)))
