# expect: reserved_delta =
# family: mistake
"""Wrong: reports allocated memory as reserved (and invents a reserved figure on the CPU)."""

from __future__ import annotations

import tracemalloc


class MemoryTracker:
    """`with MemoryTracker(device) as t: ...`, then t.allocated_delta, t.peak_delta and
    t.reserved_delta in bytes (reserved_delta is None on the CPU)."""

    def __init__(self, device: str = "cpu") -> None:
        self.device = str(device)
        self.allocated_delta = 0
        self.peak_delta = 0
        self.reserved_delta: int | None = None
        self._started_tracing = False

    def __enter__(self) -> MemoryTracker:
        if self.device == "cpu":
            self._started_tracing = not tracemalloc.is_tracing()
            if self._started_tracing:
                tracemalloc.start()
            tracemalloc.reset_peak()  # a peak from before the block is not ours
            self._start = tracemalloc.get_traced_memory()[0]
        else:
            import torch

            torch.cuda.synchronize(self.device)
            torch.cuda.reset_peak_memory_stats(self.device)
            self._start = torch.cuda.memory_allocated(self.device)
            self._start_reserved = torch.cuda.memory_reserved(self.device)
        return self

    def __exit__(self, *exc: object) -> None:
        if self.device == "cpu":
            current, peak = tracemalloc.get_traced_memory()
            if self._started_tracing:
                tracemalloc.stop()
            self.allocated_delta = current - self._start
            self.peak_delta = peak - self._start
            self.reserved_delta = self.allocated_delta
        else:
            import torch

            torch.cuda.synchronize(self.device)
            self.allocated_delta = torch.cuda.memory_allocated(self.device) - self._start
            self.peak_delta = torch.cuda.max_memory_allocated(self.device) - self._start
            self.reserved_delta = self.allocated_delta
        # Returning None lets an exception from the block propagate.
