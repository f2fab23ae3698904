# why: the deltas come out as NumPy int64s (arithmetic on an array of the two readings)
"""Correct: the figures kept as NumPy int64 (an array of readings minus the start), which are
numbers of bytes, only not Python ints; tracemalloc on the CPU, torch's allocator on a GPU."""

import tracemalloc

import numpy as np


class MemoryTracker:
    def __init__(self, device="cpu"):
        self.device = str(device)
        self.reserved_delta = None

    def _readings(self):
        if self.device == "cpu":
            return np.array(tracemalloc.get_traced_memory(), dtype=np.int64)
        import torch

        torch.cuda.synchronize(self.device)
        return np.array(
            [
                torch.cuda.memory_allocated(self.device),
                torch.cuda.max_memory_allocated(self.device),
                torch.cuda.memory_reserved(self.device),
            ],
            dtype=np.int64,
        )

    def __enter__(self):
        if self.device == "cpu":
            self._started = not tracemalloc.is_tracing()
            if self._started:
                tracemalloc.start()
            tracemalloc.reset_peak()
        else:
            import torch

            torch.cuda.reset_peak_memory_stats(self.device)
        self._start = self._readings()
        return self

    def __exit__(self, *exc):
        now = self._readings()
        if self.device == "cpu":
            if self._started:
                tracemalloc.stop()
            self.allocated_delta, self.peak_delta = now - self._start[0]
        else:
            self.allocated_delta = now[0] - self._start[0]
            self.peak_delta = now[1] - self._start[0]
            self.reserved_delta = now[2] - self._start[2]
