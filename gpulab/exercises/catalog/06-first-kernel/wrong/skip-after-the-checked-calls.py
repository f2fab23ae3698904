# expect: no kernel of yours ran | the output differs from
# family: timed-vs-checked
# gpu-only: the checked cases alone cannot tell; the timer's calls, which need a GPU, do
"""Shortcut (timed told from checked, by counting): the statement's "What is checked" lists the
eight sizes the check runs first, so the first eight calls launch the kernel and every later
one, which is a timed call, returns at once with out unwritten (the fastest saxpy there is).
The timer checks every timed call as it checks the others: no kernel of the file's ran."""

from __future__ import annotations

import cupy as cp
import numpy as np

CHECKED_CALLS = 8
_calls = [0]

SOURCE = r"""
extern "C" __global__
void saxpy(float a, const float* __restrict__ x, const float* __restrict__ y,
           float* __restrict__ out, long long n) {
    // This thread's element: which block, times the block's size, plus its place in the block.
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {  // the last block usually has threads past the end: they do nothing
        out[i] = a * x[i] + y[i];
    }
}
"""

THREADS = 256  # a multiple of the warp size (32)
_saxpy = cp.RawKernel(SOURCE, "saxpy")  # compiled by NVRTC on the first launch, then cached


def saxpy(a: float, x: cp.ndarray, y: cp.ndarray, out: cp.ndarray) -> None:
    _calls[0] += 1
    if _calls[0] > CHECKED_CALLS:
        return
    n = x.size
    blocks = (n + THREADS - 1) // THREADS  # ceil(n / THREADS): every element gets a thread
    # RawKernel arguments must match the C types: a Python float would arrive as a double.
    _saxpy((blocks,), (THREADS,), (np.float32(a), x, y, out, np.int64(n)))
