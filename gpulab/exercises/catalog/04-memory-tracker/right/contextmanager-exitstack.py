# why: the tracker written with contextlib.contextmanager and an ExitStack
"""A memory tracker whose work is a generator context manager (correct)"""

import contextlib
import tracemalloc


@contextlib.contextmanager
def _traced(t):
    started = not tracemalloc.is_tracing()
    if started:
        tracemalloc.start()
    tracemalloc.reset_peak()
    start = tracemalloc.get_traced_memory()[0]
    try:
        yield t
    finally:
        cur, peak = tracemalloc.get_traced_memory()
        if started:
            tracemalloc.stop()
        t.allocated_delta, t.peak_delta = cur - start, peak - start


@contextlib.contextmanager
def _cuda(t):
    import torch

    torch.cuda.synchronize(t.device)
    torch.cuda.reset_peak_memory_stats(t.device)
    a0, r0 = torch.cuda.memory_allocated(t.device), torch.cuda.memory_reserved(t.device)
    try:
        yield t
    finally:
        torch.cuda.synchronize(t.device)
        t.allocated_delta = torch.cuda.memory_allocated(t.device) - a0
        t.peak_delta = torch.cuda.max_memory_allocated(t.device) - a0
        t.reserved_delta = torch.cuda.memory_reserved(t.device) - r0


class MemoryTracker:
    def __init__(self, device="cpu"):
        self.device = str(device)
        self.allocated_delta = self.peak_delta = 0
        self.reserved_delta = None
        self._stack = contextlib.ExitStack()

    def __enter__(self):
        cm = _traced(self) if self.device == "cpu" else _cuda(self)
        return self._stack.enter_context(cm)

    def __exit__(self, *exc):
        return self._stack.__exit__(*exc)
