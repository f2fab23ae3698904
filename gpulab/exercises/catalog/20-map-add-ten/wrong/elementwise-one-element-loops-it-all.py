# expect: a thread walking the array is a CPU loop
# family: loose-property
# emulator-only: the emulator counts each thread's global accesses; on a GPU an ElementwiseKernel over one element is one thread, and its walk over the timed array grades far below bronze
"""Shortcut (the one-thread map inside an ElementwiseKernel): the kernel is sized by a
one-element dummy output, and its one element's operation loops over the whole array through
`raw` parameters. The emulator ran every ElementwiseKernel in one thread, so the busiest-thread
count could not ask anything of them. Before the fix: pass (on the emulator). The emulator now
launches an ElementwiseKernel over a grid of 128-thread blocks, as CuPy does, and hands the
watch its counts: one thread made all of the accesses ("a thread walking the array is a CPU
loop")."""

import cupy as cp
import numpy as np

_k = cp.ElementwiseKernel(
    "raw float32 a, int32 m, float32 d_in",
    "float32 d, raw float32 o",
    "for (int j = 0; j < m; ++j) o[j] = a[j] + 10.0f; d = d_in;",
    "add_ten_loop",
)


def add_ten(a, out):
    dummy = cp.zeros(1, dtype=cp.float32)
    _k(a, np.int32(a.size), dummy, dummy, out)
