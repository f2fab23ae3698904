# expect: a thread walking a row
# family: loose-property
# emulator-only: on a GPU the compiled code cannot say which thread walks a row (counted as the emulator runs it); the GPU times it, graded beside the expert
"""Shortcut (the taught structure skipped, in the permitted clothing): wrong/elementwise-loop-per-
row.py, one thread per row walking its 4096 values in a serial loop, written as a RawKernel
instead of an ElementwiseKernel. The exercise's kind rule (ReductionKernel, RawKernel or
RawModule) is met by the launch's kind, and no rule asks whether the row was reduced in parallel
(no busiest-thread or threads-per-row rule here, unlike scan and histogram)."""

import cupy as cp
import numpy as np

_k = cp.RawKernel(
    r"""
extern "C" __global__ void row_norms(const float* x, float* out, int rows, int cols) {
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows) return;
    const float* p = x + (long long)r * cols;
    float s = 0.0f;
    for (int c = 0; c < cols; ++c) s += p[c] * p[c];
    out[r] = sqrtf(s);
}""",
    "row_norms",
)


def row_norms(x, out):
    rows, cols = x.shape
    _k(((rows + 127) // 128,), (128,), (x, out, np.int32(rows), np.int32(cols)))
