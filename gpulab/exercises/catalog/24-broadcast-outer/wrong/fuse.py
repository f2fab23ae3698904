# expect: lets CuPy write what this exercise teaches
# family: library
"""Shortcut: cupy.fuse handed col[:, None] and row[None, :]: CuPy's fused kernel broadcasts, writes the index and the guard."""

import cupy as cp


@cp.fuse
def _add(c, r):  # a named function: CuPy names the fused kernel after it
    return c + r


def outer_add(col, row, out):
    out[...] = _add(col[:, None], row[None, :])
