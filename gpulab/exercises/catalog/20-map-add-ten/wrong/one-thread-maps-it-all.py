# expect: a thread walking the array is a CPU loop
# family: loose-property
# emulator-only: the emulator counts each thread's global accesses; on a GPU the compiled code cannot say which thread works, and one thread's walk over the timed array grades far below bronze
"""Shortcut (the map as a CPU loop on the GPU, a documented limit): one block of 256 threads,
and thread 0 alone adds 10 to every element in a plain loop while the other 255 idle. The
numbers are right and the kernel is the file's own. Before the fix: pass (on the emulator). The
emulator counts the global accesses of each RawKernel launch's busiest thread: all of them in
one ("a thread walking the array is a CPU loop"); an ElementwiseKernel, which the emulator runs
in one thread and CuPy spreads over a grid on a GPU, is not asked."""

import cupy as cp
import numpy as np

_k = cp.RawKernel(
    r"""
extern "C" __global__ void add_ten(const float* a, float* out, int n) {
    if (blockIdx.x == 0 && threadIdx.x == 0)
        for (int i = 0; i < n; ++i) out[i] = a[i] + 10.0f;
}""",
    "add_ten",
)


def add_ten(a, out):
    _k((1,), (256,), (a, out, np.int32(a.size)))
