# expect: this exercise fixes the grid at
# family: writes-what-check-reads
"""Shortcut (what the check reads, written): no grid-stride loop, one thread per element and a
grid of ceil(n / 256) blocks, with the SM count the fixed-grid rule reads raised at import by
writing into the dict `Device().attributes` returned. CuPy keeps that dict per device and hands
the same one out again, so on an H200 the rule's limit (8 blocks per SM) grew with the write
and the file passed. The rule now asks the driver (`runtime.deviceGetAttribute`): the write
changes nothing it reads, and the growing grid is named."""

import cupy as cp
import numpy as np

SOURCE = r"""
extern "C" __global__ void saxpy(float alpha, const float* x, const float* y, float* out,
                                 long long n) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = alpha * x[i] + y[i];
}
"""

_kernel = cp.RawKernel(SOURCE, "saxpy")
cp.cuda.Device().attributes["MultiProcessorCount"] = 1 << 20


def saxpy(alpha, x, y, out):
    n = x.size
    blocks = (n + 255) // 256  # grows with n
    _kernel((blocks,), (256,), (np.float32(alpha), x, y, out, np.int64(n)))
