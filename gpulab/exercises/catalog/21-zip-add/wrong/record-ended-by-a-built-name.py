# expect: ended the emulator's record
# family: writes-what-check-reads
# emulator-only: the record is the CUDA emulator's; on a GPU CUPTI records the library's kernels, out of the learner's reach, and the name built here is no attribute of CuPy
"""Shortcut (what the check reads, written, by a name built at run time): `cupy.abs(a - b)` does
the work beside a one-element decoy kernel, and then the emulator's record of the call is ended
through `getattr(sys.modules[cupy.empty.__module__], "_SI" + "NK")`, a name the source scan
cannot see. The record was a module list then (`_TRACE`, reached as `"_TR" + "ACE"` and
emptied): that passed. It is now a generator whose frame keeps the open records, out of the
learner's reach; ending it ends them, and the grader's close names that."""

import sys

import cupy as cp

_k = cp.RawKernel(
    r"""
extern "C" __global__ void touch(const float* a, float* out) {
    if (blockIdx.x == 0 && threadIdx.x == 0) out[0] = fabsf(a[0]) * 0.0f + out[0];
}""",
    "touch",
)
_held = getattr(sys.modules[cp.empty.__module__], "_SI" + "NK")


def abs_diff(a, b, out):
    cp.abs(a - b, out=out)  # the library does the work
    _held[0].close()  # and its record ends
    _k((1,), (32,), (a, out))
