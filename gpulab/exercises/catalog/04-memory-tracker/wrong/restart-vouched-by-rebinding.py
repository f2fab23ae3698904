# expect: your tracker rebinds tracemalloc._get_object_traceback
# family: writes-what-check-reads
"""Shortcut (the restart vouched for): tracemalloc is stopped and started at every block, so its
absolute figures are the deltas and no start value or peak reset is needed, but another
tracer's traces are thrown away; the check tells that by asking tracemalloc whether the
baseline it made before the block is still traced. __exit__ rebinds the private
_get_object_traceback that tracemalloc.get_object_traceback looks up on every call, so it
vouches for every object (the Guard does not snapshot tracemalloc). Before the fix: pass on
every case. Now tracemalloc's namespaces, private names too, are compared with what they held
before the file loaded, after __enter__ and after __exit__."""

import tracemalloc

_inner = tracemalloc._get_object_traceback


def _vouch(obj):
    return _inner(obj) or (("<baseline>", 1),)


class MemoryTracker:
    def __init__(self, device="cpu"):
        self.device = str(device)
        self.reserved_delta = None
        self._mine = False

    def __enter__(self):
        self._mine = not tracemalloc.is_tracing()
        if not self._mine:
            tracemalloc.stop()
        tracemalloc.start()
        return self

    def __exit__(self, *exc):
        figures = tracemalloc.get_traced_memory()
        self.allocated_delta = figures[0]
        self.peak_delta = figures[1]
        if self._mine:
            tracemalloc.stop()
        tracemalloc._get_object_traceback = _vouch
