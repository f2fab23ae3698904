# why: a smaller fixed grid (2 blocks of 512 threads per SM) and a 2-D block: the rule is a grid that does not grow with n, not the statement's exact numbers
"""A fixed grid and a grid-stride loop: out = alpha * x + y, with fewer, larger blocks."""

import cupy as cp
import numpy as np

SOURCE = r"""
extern "C" __global__ void saxpy(float alpha, const float* x, const float* y, float* out,
                                 long long n) {
    long long threads = (long long)blockDim.x * blockDim.y * gridDim.x;
    long long t = threadIdx.y * blockDim.x + threadIdx.x;
    for (long long i = blockIdx.x * (long long)blockDim.x * blockDim.y + t; i < n; i += threads) {
        out[i] = alpha * x[i] + y[i];
    }
}
"""

_kernel = cp.RawKernel(SOURCE, "saxpy")


def saxpy(alpha, x, y, out):
    sms = cp.cuda.Device().attributes["MultiProcessorCount"]
    _kernel((2 * sms,), (32, 16), (np.float32(alpha), x, y, out, np.int64(x.size)))
