# expect: a thread walking the array is a CPU loop
# family: loose-property
# emulator-only: the emulator counts each thread's global accesses; on a GPU the compiled code cannot say which thread works, and one thread's walk over the timed array grades far below bronze
"""Shortcut (fused, but not parallel): one RawKernel launch, so the one-kernel rule holds, in
which thread 0 computes max(alpha * x + y, 0) for every element in a loop while the rest of
the warp idles. Before the fix: pass (on the emulator). The emulator counts the global accesses
of each RawKernel launch's busiest thread: all 3n in one ("a thread walking the array is a CPU
loop"); an ElementwiseKernel or cupy.fuse, which the emulator runs in one thread, is not
asked."""

import cupy as cp
import numpy as np

_k = cp.RawKernel(
    r"""
extern "C" __global__ void axpy_relu(float alpha, const float* x, const float* y, float* out,
                                     int n) {
    if (threadIdx.x == 0)
        for (int i = 0; i < n; ++i) out[i] = fmaxf(alpha * x[i] + y[i], 0.0f);
}""",
    "axpy_relu",
)


def axpy_relu(alpha, x, y, out):
    _k((1,), (32,), (np.float32(alpha), x, y, out, np.int32(x.size)))
