# why: a fixed, small grid (8 blocks of 64) whose threads walk the array in a grid-stride loop, launched with keywords
"""saxpy with a grid-stride loop: fewer threads than elements, each doing every stride-th one."""

import cupy as cp
import numpy as np

SOURCE = r"""
extern "C" __global__ void saxpy_gs(float a, const float* x, const float* y, float* out,
                                    unsigned long long n) {
    for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
         i += (unsigned long long)gridDim.x * blockDim.x) {
        out[i] = a * x[i] + y[i];
    }
}
"""

_kernel = cp.RawKernel(SOURCE, "saxpy_gs")


def saxpy(a, x, y, out):
    _kernel(grid=(8,), block=(64,), args=(np.float32(a), x, y, out, np.uint64(x.size)))
