# expect: never written
# family: mistake
"""A fixed grid and a grid-stride loop: out = alpha * x + y."""

import cupy as cp
import numpy as np

SOURCE = r"""
extern "C" __global__ void saxpy(float alpha, const float* x, const float* y, float* out,
                                 long long n) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;  // one element each
    if (i < n) out[i] = alpha * x[i] + y[i];
}
"""

_kernel = cp.RawKernel(SOURCE, "saxpy")


def saxpy(alpha, x, y, out):
    n = x.size
    threads = 256
    sms = cp.cuda.Device().attributes["MultiProcessorCount"]
    blocks = max(1, min(8 * sms, (n + threads - 1) // threads))  # fixed: does not grow with n
    _kernel((blocks,), (threads,), (np.float32(alpha), x, y, out, np.int64(n)))
