# expect: a thread walking the array is a CPU loop
# family: loose-property
# emulator-only: the emulator counts each thread's global accesses; on a GPU the compiled code cannot say which thread works, and one thread's walk over the timed array grades far below bronze
"""Shortcut (no blocks to round up, no spare thread to guard): one warp, and its thread 0 loops
from 0 to n, so the launch never depends on n and the loop's bound stands in for the guard
this exercise teaches. Before the fix: pass (on the emulator). The emulator counts the global
accesses of each RawKernel launch's busiest thread: all of them in one ("a thread walking the
array is a CPU loop")."""

import cupy as cp
import numpy as np

_k = cp.RawKernel(
    r"""
extern "C" __global__ void leaky(const float* a, float* out, int n) {
    if (threadIdx.x == 0)
        for (int i = 0; i < n; ++i) {
            float v = a[i];
            out[i] = v > 0.0f ? v : v * 0.01f;
        }
}""",
    "leaky",
)


def leaky_relu(a, out):
    _k((1,), (32,), (a, out, np.int32(a.size)))
