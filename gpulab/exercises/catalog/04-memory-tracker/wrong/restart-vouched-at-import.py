# expect: your tracker rebinds tracemalloc.get_object_traceback
# family: writes-what-check-reads
"""Shortcut (the restart vouched for, at import): as wrong/restart-vouched-by-rebinding.py, but
tracemalloc.get_object_traceback is rebound while the file loads, before any tracker is made,
so a snapshot taken around the tracker alone would not see it; the tracker is a generator
context manager. Before the fix: pass. Now tracemalloc's namespaces are compared with what they
held before the learner's file loaded."""

import contextlib
import tracemalloc
from types import SimpleNamespace

_real = tracemalloc.get_object_traceback
tracemalloc.get_object_traceback = lambda obj: _real(obj) or tracemalloc.Traceback(((__file__, 1),))


@contextlib.contextmanager
def MemoryTracker(device="cpu"):
    figures = SimpleNamespace(reserved_delta=None)
    outside = tracemalloc.is_tracing()
    tracemalloc.stop()
    tracemalloc.start()
    try:
        yield figures
    finally:
        figures.allocated_delta, figures.peak_delta = tracemalloc.get_traced_memory()
        if not outside:
            tracemalloc.stop()
