# why: cupy.fuse: the learner's own Python function compiled into one kernel by CuPy (a kernel of theirs, not a library routine); the result is then copied into out
"""Guards with cupy.fuse: a leaky ReLU as one fused kernel."""

import cupy as cp
import numpy as np


@cp.fuse()
def _leaky(a):
    return cp.maximum(a, a * np.float32(0.01))  # a where a > 0, else 0.01 a, the larger


def leaky_relu(a, out):
    out[...] = _leaky(a)
