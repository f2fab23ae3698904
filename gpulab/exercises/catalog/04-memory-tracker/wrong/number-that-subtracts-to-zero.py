# expect: a number of your own class
# family: lazy
"""Shortcut (a result that decides its own comparison): measures no memory. The figures are a
float subclass whose subtraction returns 0, so the check's `abs(got - expected) > slack` read
every figure as exact; `numbers.Real` took it for a number of bytes. Before the fix: pass on
every case. Now a figure must be an int, a float or one of NumPy's own scalars."""

from __future__ import annotations


class _Exact(float):
    def __sub__(self, other):
        return 0.0

    def __rsub__(self, other):
        return 0.0


class MemoryTracker:
    """Every figure is fixed when the tracker is made; the block is not looked at."""

    allocated_delta = peak_delta = _Exact(1.0)
    reserved_delta = None

    def __init__(self, device="cpu"):
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return None
