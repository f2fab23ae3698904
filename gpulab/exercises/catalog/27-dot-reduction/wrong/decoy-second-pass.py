# expect: a library kernel ran inside your call | cupy.sum
# family: library
"""Wrong, a partial decoy: the learner's kernel writes one partial sum per block and cupy.sum adds
the partials. The library does the last step of the reduction inside the call; in this exercise
the second pass is a launch of your own kernel too (or one atomic per block)."""

import cupy as cp
import numpy as np

SOURCE = r"""
#define BLOCK 256

extern "C" __global__ void dot_partials(const float* a, const float* b, float* partial,
                                        long long n) {
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
    if (t == 0) partial[blockIdx.x] = sm[0];
}
"""

_kernel = cp.RawKernel(SOURCE, "dot_partials")


def dot(a, b, out):
    n = a.size
    sms = cp.cuda.Device().attributes["MultiProcessorCount"]
    blocks = max(1, min(4 * sms, (n + 255) // 256))
    partial = cp.empty(blocks, dtype=cp.float32)
    _kernel((blocks,), (256,), (a, b, partial, np.int64(n)))
    cp.sum(partial, keepdims=True, out=out)  # a few hundred values: one small launch
