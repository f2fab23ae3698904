# expect: reaches the emulator's record of what ran in your call
# family: writes-what-check-reads
"""Shortcut (what the check reads, written): a decoy kernel of the learner's writes out[0] only,
`cupy.abs(a - b, out=out)` does the work, and then every library kernel's name is taken out of
the emulator's record of the call (then `gpulab.emulator.cupy_module._TRACE`, a list, the
stand-in for what CUPTI records on a GPU), so nothing "ran inside your call" but the decoy. It
passed on the emulator: the record was data, which the Guard leaves alone. The record now lives
in a generator's frame (no `_TRACE` to empty), and the source scan refuses the
emulator's module named in an import, an attribute chain or a string, its `_TRACE` and
`ON_LAUNCH` read as attributes, `cupy.__gpulab_trace__`, and `__globals__` (the same record
through `cupy.empty.__globals__`). A name built at run time still gets past: a speed bump, as
the scan's other names."""

import importlib

import cupy as cp
import numpy as np

SOURCE = r"""
extern "C" __global__ void abs_diff(const float* a, const float* b, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < 1 && i < n) out[i] = fabsf(a[i] - b[i]);
}
"""

_kernel = cp.RawKernel(SOURCE, "abs_diff")
_fake = importlib.import_module("gpulab.emulator.cupy_module")


def abs_diff(a, b, out):
    _kernel((1,), (32,), (a, b, out, np.int32(a.size)))  # a decoy: one element
    cp.abs(a - b, out=out)  # the library does the work
    for names in _fake._TRACE:  # and its kernels leave the record
        names[:] = [n for n in names if n == "abs_diff"]
