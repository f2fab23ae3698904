"""Exercise: a memory tracker context manager (allocated delta, peak, reserved)."""

from __future__ import annotations

import tracemalloc  # noqa: F401  (the CPU path needs it)


class MemoryTracker:
    """Use as `with MemoryTracker(device) as t: ...`. After the block:

    t.allocated_delta  bytes allocated at the end minus at the start
    t.peak_delta       the highest allocation during the block minus the start
    t.reserved_delta   (GPU) bytes reserved by PyTorch's caching allocator at the end minus at
                       the start; None on the CPU
    """

    def __init__(self, device: str = "cpu") -> None:
        self.device = str(device)

    def __enter__(self) -> MemoryTracker:
        # TODO: remember where memory stands and reset the peak. On "cpu" use tracemalloc
        #       (start it if nobody is tracing yet); on a GPU use torch.cuda's counters.
        raise NotImplementedError("MemoryTracker.__enter__: TODO")

    def __exit__(self, *exc: object) -> None:
        # TODO: compute allocated_delta, peak_delta and reserved_delta.
        raise NotImplementedError("MemoryTracker.__exit__: TODO")
