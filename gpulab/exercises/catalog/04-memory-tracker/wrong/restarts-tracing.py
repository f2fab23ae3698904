# expect: restarted tracemalloc that somebody else started
# family: loose-property
"""Shortcut: restarts tracemalloc at every block (stop + start), even when somebody else was
tracing: that throws away the other tracer's traces and its baseline, but makes the absolute
figures equal the deltas, so no start value or peak reset is needed. Tracing is left on only when
it was on before, which is all the check looks at."""

import tracemalloc


class MemoryTracker:
    def __init__(self, device="cpu"):
        self.device = str(device)
        self.reserved_delta = None

    def __enter__(self):
        self._was = tracemalloc.is_tracing()
        tracemalloc.stop()  # the other tracer's traces are gone
        tracemalloc.start()
        return self

    def __exit__(self, *exc):
        self.allocated_delta, self.peak_delta = tracemalloc.get_traced_memory()
        if not self._was:
            tracemalloc.stop()
