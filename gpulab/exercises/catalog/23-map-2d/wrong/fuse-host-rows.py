# expect: lets CuPy write what this exercise teaches
# family: library
"""Shortcut: the row numbers made on the host and copied over, then cupy.fuse broadcasts them over a: CuPy writes the 2-D indexing."""

import cupy as cp
import numpy as np


@cp.fuse
def _add(a, r):  # a named function: CuPy names the fused kernel after it
    return a + r


def add_row_index(a, out):
    rows = cp.asarray(np.arange(a.shape[0], dtype=np.float32)[:, None])
    out[...] = _add(a, rows)
