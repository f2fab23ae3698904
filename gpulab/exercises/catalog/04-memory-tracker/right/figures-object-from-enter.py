# why: __enter__ returns a separate figures object (not the tracker), filled by __exit__ from a tracemalloc snapshot diff
"""Correct: `with MemoryTracker(d) as t` binds a small figures object, not the tracker; __exit__
fills it. The kept bytes come from two tracemalloc snapshots compared (the traced memory the
block added, statistic by statistic), the peak from get_traced_memory after reset_peak."""

from __future__ import annotations

import tracemalloc
from dataclasses import dataclass


@dataclass
class Figures:
    allocated_delta: int = 0
    peak_delta: int = 0
    reserved_delta: int | None = None


class MemoryTracker:
    def __init__(self, device="cpu"):
        self.device = str(device)
        self.figures = Figures()

    def __enter__(self):
        if self.device == "cpu":
            self._mine = not tracemalloc.is_tracing()
            if self._mine:
                tracemalloc.start()
            tracemalloc.reset_peak()
            self._before = tracemalloc.take_snapshot()
            self._start = tracemalloc.get_traced_memory()[0]
        else:
            import torch

            torch.cuda.synchronize(self.device)
            torch.cuda.reset_peak_memory_stats(self.device)
            self._start = torch.cuda.memory_allocated(self.device)
            self._reserved = torch.cuda.memory_reserved(self.device)
        return self.figures

    def __exit__(self, *exc):
        f = self.figures
        if self.device == "cpu":
            peak = tracemalloc.get_traced_memory()[1]
            after = tracemalloc.take_snapshot()
            if self._mine:
                tracemalloc.stop()
            f.allocated_delta = sum(s.size_diff for s in after.compare_to(self._before, "filename"))
            f.peak_delta = peak - self._start
        else:
            import torch

            torch.cuda.synchronize(self.device)
            f.allocated_delta = torch.cuda.memory_allocated(self.device) - self._start
            f.peak_delta = torch.cuda.max_memory_allocated(self.device) - self._start
            f.reserved_delta = torch.cuda.memory_reserved(self.device) - self._reserved
