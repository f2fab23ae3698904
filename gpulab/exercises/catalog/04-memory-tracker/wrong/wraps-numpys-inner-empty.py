# expect: your tracker rebinds
# family: writes-what-check-reads
"""Shortcut (writing what the check reads, one level down): no memory is measured. The check
bound numpy.full before this file loaded (wrong/wraps-the-allocator.py), but numpy.full looks
up `empty` in numpy._core.numeric's globals on every call. __enter__ rebinds that name to a
wrapper that counts the bytes of each array made and a weakref.finalize that takes them off
when it dies (so kept = live bytes, peak = the highest live bytes); __exit__ puts it back. No
profiler, no tracer, no frame, no tracemalloc."""

import weakref

try:
    import numpy._core.numeric as _numeric
except ImportError:  # NumPy 1.x
    import numpy.core.numeric as _numeric


class MemoryTracker:
    def __init__(self, device="cpu"):
        self.device = str(device)
        self.allocated_delta = 0
        self.peak_delta = 0
        self.reserved_delta = None

    def _freed(self, n):
        self._live -= n

    def __enter__(self):
        self._live = 0
        self._peak = 0
        self._real = _numeric.empty
        real = self._real

        def empty(*args, **kwargs):
            a = real(*args, **kwargs)
            self._live += a.nbytes
            self._peak = max(self._peak, self._live)
            weakref.finalize(a, self._freed, a.nbytes)
            return a

        _numeric.empty = empty
        return self

    def __exit__(self, *exc):
        _numeric.empty = self._real
        self.allocated_delta = self._live
        self.peak_delta = self._peak
        return None
