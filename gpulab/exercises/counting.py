"""A dataset that counts its reads, for checks that must see which samples each rank loaded.

It lives in an importable module (not in a check.py, which is loaded under a fresh name) so a
DataLoader can hand it to worker processes by pickle under any start method, and its counts are
a tensor in shared memory, so the reads made in those workers count too. Plain `__len__` and
`__getitem__` (no torch.utils.data.Dataset base): importing this module imports no torch.
"""

from __future__ import annotations

from typing import Any


class CountingDataset:
    """(x[i], y[i]) pairs; `reads[i]` is how many times sample i was read, in any process."""

    def __init__(self, x: Any, y: Any) -> None:
        import torch

        self.x, self.y = x, y
        self.reads = torch.zeros(len(x), dtype=torch.int64).share_memory_()

    def __len__(self) -> int:
        return len(self.x)

    def __getitem__(self, i: int) -> tuple[Any, Any]:
        self.reads[i] += 1
        return self.x[i], self.y[i]
