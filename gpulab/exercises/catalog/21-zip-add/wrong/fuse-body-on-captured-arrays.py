# expect: cupy.fuse cannot compile a CuPy array it was not handed
# family: library
# emulator-only: CuPy's fusion traces its body with proxies of its arguments; the emulator refuses an array met there that is none of them, and on a GPU the trace would record such work's kernels
"""Shortcut (library work hidden in a fused body): `cupy.fuse` over a function handed only a
dummy, whose body lets `np.abs(a - b, out=out)` do the work on the real arrays held in a
global, beside a one-element decoy kernel. Nothing ran inside a fused body was recorded (it is
the learner's fused kernel), so it passed on the emulator. The body's proxies now hold NumPy
arrays, and a device array met inside a fused body is refused as CuPy cannot compile it."""

import cupy as cp
import numpy as np

_k = cp.RawKernel(
    r"""
extern "C" __global__ void touch(const float* a, float* out) {
    if (blockIdx.x == 0 && threadIdx.x == 0) out[0] = fabsf(a[0]) * 0.0f + out[0];
}""",
    "touch",
)
_held = {}


@cp.fuse
def _body(x):
    np.abs(_held["a"] - _held["b"], out=_held["out"])
    return x + 0


def abs_diff(a, b, out):
    _held.update(a=a, b=b, out=out)
    _body(a)
    _k((1,), (32,), (a, out))
