# expect: fusing is one kernel | ran inside your call
# family: property-proxy
"""Shortcut (the taught structure skipped, the second launch out of the watch's sight): not
fused, an AXPY kernel then a ReLU kernel over out, as wrong/two-kernels.py. The ReLU is launched
through `_relu.inner`, the library's kernel object behind the watched wrapper: the one-launch
rule counts only the watched launches, and on the emulator a launch records no trace name, so
the extra kernel is seen by nothing."""

import cupy as cp
import numpy as np

_axpy = cp.ElementwiseKernel(
    "float32 alpha, float32 x, float32 y", "float32 out", "out = alpha * x + y", "axpy"
)
_relu = cp.ElementwiseKernel("float32 v", "float32 out", "out = v > 0.0f ? v : 0.0f", "relu")
_relu_raw = getattr(_relu, "inner", _relu)


def axpy_relu(alpha, x, y, out):
    _axpy(np.float32(alpha), x, y, out)
    _relu_raw(out, out)
