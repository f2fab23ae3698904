# expect: a number of your own class
# family: lazy
"""Shortcut (a number that grades itself, passed off as NumPy's): measures no memory. The figures
are a float subclass that sets `__module__ = "numpy"` on itself and answers 0 to every
subtraction, so the check's `abs(got - expected) > slack` read each figure as exact. The check
took a figure of a type whose module was "numpy" for one of NumPy's scalars. Before the fix:
pass on every case. Now NumPy's scalar types are told by identity (`numpy.sctypeDict`)."""


class _Bytes(float):
    __module__ = "numpy"

    def __sub__(self, other):
        return 0.0

    def __rsub__(self, other):
        return 0.0


class MemoryTracker:
    def __init__(self, device="cpu"):
        self.device = str(device)
        self.allocated_delta = _Bytes(1.0)
        self.peak_delta = _Bytes(2.0)
        self.reserved_delta = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return None
