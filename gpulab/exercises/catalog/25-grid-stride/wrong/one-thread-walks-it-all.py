# expect: a thread walking the array is a CPU loop
# family: loose-property
# emulator-only: the emulator counts each thread's global accesses; on a GPU the compiled code cannot say which thread works, and one thread's walk over the timed array grades far below bronze
"""Shortcut (the grid fixed, the loop skipped): one block of 32 threads, a grid far under the
limit, and thread 0 alone walks the whole array with a plain loop while the other 31 idle. The
grid does not grow with n and every element is written, so the grid rule and the comparison
pass. Before the fix: pass (on the emulator). The emulator counts the global accesses of each
launch's busiest thread: all 3n of them in one thread ("a thread walking the array is a CPU
loop")."""

import cupy as cp
import numpy as np

_k = cp.RawKernel(
    r"""
extern "C" __global__ void saxpy(float a, const float* x, const float* y, float* out, long long n) {
    if (threadIdx.x == 0 && blockIdx.x == 0)
        for (long long i = 0; i < n; ++i) out[i] = a * x[i] + y[i];
}""",
    "saxpy",
)


def saxpy(alpha, x, y, out):
    _k((1,), (32,), (np.float32(alpha), x, y, out, np.int64(x.size)))
