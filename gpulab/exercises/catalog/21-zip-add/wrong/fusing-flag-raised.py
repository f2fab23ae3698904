# expect: cupy.fuse cannot compile a CuPy array it was not handed
# family: writes-what-check-reads
# emulator-only: the flag is the CUDA emulator's; a real CuPy has no such list, and on a GPU CUPTI records the library's kernels whatever the learner's code sets
"""Shortcut (the emulator's state written, by a name built at run time): the list that says a
fused body is running (`"_FUS" + "ING"`, past the source scan) is pushed around
`cupy.abs(a - b)`, so the fake took the library's call for a step of the learner's fused kernel
and recorded nothing, beside a one-element decoy: it passed. A fused body's steps no longer
reach the device array's methods (its proxies hold NumPy arrays), so one that runs while the
flag is up met an array from outside a fused body, and is refused."""

import sys

import cupy as cp

_k = cp.RawKernel(
    r"""
extern "C" __global__ void touch(const float* a, float* out) {
    if (blockIdx.x == 0 && threadIdx.x == 0) out[0] = fabsf(a[0]) * 0.0f + out[0];
}""",
    "touch",
)
_flag = getattr(sys.modules[cp.empty.__module__], "_FUS" + "ING")


def abs_diff(a, b, out):
    _flag.append("abs_diff")
    try:
        cp.abs(a - b, out=out)
    finally:
        _flag.pop()
    _k((1,), (32,), (a, out))
