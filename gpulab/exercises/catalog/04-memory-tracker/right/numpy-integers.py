# why: the deltas come out as NumPy int64s (arithmetic on an array of the two readings)
"""Correct: reads tracemalloc and keeps the figures as NumPy int64 (np.int64(current) - start),
which are numbers of bytes, only not Python ints."""

import tracemalloc

import numpy as np


class MemoryTracker:
    def __init__(self, device="cpu"):
        self.device = str(device)
        self.reserved_delta = None

    def __enter__(self):
        self._started = not tracemalloc.is_tracing()
        if self._started:
            tracemalloc.start()
        tracemalloc.reset_peak()
        self._start = np.int64(tracemalloc.get_traced_memory()[0])
        return self

    def __exit__(self, *exc):
        now = np.array(tracemalloc.get_traced_memory(), dtype=np.int64)
        if self._started:
            tracemalloc.stop()
        self.allocated_delta, self.peak_delta = now - self._start
