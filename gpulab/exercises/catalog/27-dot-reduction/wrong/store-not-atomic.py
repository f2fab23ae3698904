# expect: wrong
# family: mistake
# gpu-only: the CPU emulator runs blocks one after another, so no update is lost there
"""Dot product: out[0] = sum(a * b), a shared-memory tree and one atomicAdd per block."""

import cupy as cp
import numpy as np

SOURCE = r"""
#define BLOCK 256

extern "C" __global__ void dot(const float* a, const float* b, float* out, long long n) {
    __shared__ float sm[BLOCK];
    int t = threadIdx.x;
    float acc = 0.0f;
    long long stride = (long long)BLOCK * gridDim.x;
    for (long long i = (long long)blockIdx.x * BLOCK + t; i < n; i += stride) acc += a[i] * b[i];
    sm[t] = acc;
    __syncthreads();
    for (int s = BLOCK / 2; s > 0; s >>= 1) {
        if (t < s) sm[t] += sm[t + s];
        __syncthreads();
    }
    if (t == 0) out[0] += sm[0];  // blocks overwrite each other
}
"""

_kernel = cp.RawKernel(SOURCE, "dot")


def dot(a, b, out):
    n = a.size
    sms = cp.cuda.Device().attributes["MultiProcessorCount"]
    blocks = max(1, min(8 * sms, (n + 255) // 256))
    out.fill(0)
    _kernel((blocks,), (256,), (a, b, out, np.int64(n)))
