# expect: a thread walking a row
# emulator-only: on a GPU the compiled code cannot say which thread walks a row (counted as the emulator runs it); the GPU times it, graded beside the expert
"""Shortcut (the taught structure skipped): one thread per row walks its 4096 values three times
(max, sum of exps, divide), no block reduction, no shared memory, no shuffle; a RawKernel, so the
'raw' kind rule is met. Nothing asks how a row is reduced."""

import cupy as cp
import numpy as np

_k = cp.RawKernel(
    r"""
extern "C" __global__ void softmax(const float* x, float* out, int rows, int cols) {
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows) return;
    const float* p = x + (long long)r * cols;
    float* q = out + (long long)r * cols;
    float m = -__int_as_float(0x7f800000);
    for (int c = 0; c < cols; ++c) m = fmaxf(m, p[c]);
    float s = 0.0f;
    for (int c = 0; c < cols; ++c) s += expf(p[c] - m);
    for (int c = 0; c < cols; ++c) q[c] = expf(p[c] - m) / s;
}""",
    "softmax",
)


def softmax(x, out):
    rows, cols = x.shape
    _k(((rows + 63) // 64,), (64,), (x, out, np.int32(rows), np.int32(cols)))
