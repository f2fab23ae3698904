# expect: your tracker rebinds
# family: writes-what-check-reads
"""A shortcut (writing what the check reads): no memory is measured. __enter__ rebinds
numpy.full, which the workload allocates with, and records the bytes each call asks for; its
__exit__ puts it back. The check allocates through functions it bound before this file loaded.
kept = the first allocation, peak = the first two; the GPU path would wrap torch.full alike."""

import numpy as np


class MemoryTracker:
    def __init__(self, device="cpu"):
        self.device = str(device)
        self.allocated_delta = 0
        self.peak_delta = 0
        self.reserved_delta = None

    def __enter__(self):
        self._sizes = []
        self._real = np.full
        sizes, real = self._sizes, self._real

        def full(shape, *args, **kwargs):
            out = real(shape, *args, **kwargs)
            sizes.append(out.nbytes)
            return out

        np.full = full
        return self

    def __exit__(self, *exc):
        np.full = self._real
        sizes = self._sizes + [0, 0]
        self.allocated_delta = sizes[0]
        self.peak_delta = sizes[0] + sizes[1]
