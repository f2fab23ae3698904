# expect: launches; this exercise fixes the grid at
# family: property-proxy
"""Launch shape faked by splitting: no grid-stride loop at all. One thread per element, launched
over and over on chunks of at most 8 blocks per SM, so every single launch is within the
fixed-grid rule, while the grid across all launches of a call grows with n."""

import cupy as cp
import numpy as np

SOURCE = r"""
extern "C" __global__ void saxpy_chunk(float alpha, const float* x, const float* y, float* out,
                                       long long start, long long n) {
    long long i = start + (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = alpha * x[i] + y[i];
}
"""

_kernel = cp.RawKernel(SOURCE, "saxpy_chunk")


def saxpy(alpha, x, y, out):
    n = x.size
    blocks = 8 * cp.cuda.Device().attributes["MultiProcessorCount"]
    chunk = blocks * 256
    for start in range(0, max(n, 1), chunk):
        grid = min(blocks, (n - start + 255) // 256)
        _kernel(
            (max(grid, 1),), (256,), (np.float32(alpha), x, y, out, np.int64(start), np.int64(n))
        )
