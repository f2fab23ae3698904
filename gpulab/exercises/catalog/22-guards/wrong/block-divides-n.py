# expect: not a whole number of warps
# family: loose-property
"""No guard: the block size is picked to divide n exactly, so no thread is ever out of range."""

import cupy as cp

_k = cp.RawKernel(
    r"""
extern "C" __global__ void leaky(const float* a, float* out) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float v = a[i];
    out[i] = v > 0.0f ? v : v * 0.01f;
}""",
    "leaky",
)


def leaky_relu(a, out):
    n = a.size
    b = 1
    for d in range(min(1024, n), 0, -1):
        if n % d == 0:
            b = d
            break
    _k((n // b,), (b,), (a, out))
