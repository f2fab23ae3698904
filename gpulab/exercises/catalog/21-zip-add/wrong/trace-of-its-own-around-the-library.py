# expect: a library kernel ran inside your call: cupy_subtract
# family: writes-what-check-reads
# emulator-only: the trace object is the CUDA emulator's; a real CuPy has no `__gpulab_trace__`, and on a GPU CUPTI records every kernel whoever asks
"""Shortcut (the check's record fooled by one of the learner's own): `cupy.abs(a - b)` runs
inside a traced block the learner opens through the emulator's trace object, reached by a name
built at run time (`"__gpulab_" + "trace__"`, past the source scan), beside a one-element decoy.
The fake recorded each name in the innermost open block only, the learner's, which nobody read:
it passed. Every name now goes into every open record, the grader's included."""

import cupy as cp

_k = cp.RawKernel(
    r"""
extern "C" __global__ void touch(const float* a, float* out) {
    if (blockIdx.x == 0 && threadIdx.x == 0) out[0] = fabsf(a[0]) * 0.0f + out[0];
}""",
    "touch",
)
_trace = getattr(cp, "__gpulab_" + "trace__")


def abs_diff(a, b, out):
    with _trace.call():
        cp.abs(a - b, out=out)
    _k((1,), (32,), (a, out))
