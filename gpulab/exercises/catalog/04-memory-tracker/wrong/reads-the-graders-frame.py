# expect: reads the callers' frames
# family: escape
"""Cheat: measures nothing; reads the block's sizes from the caller's frame (the check's run())."""

import sys


class MemoryTracker:
    def __init__(self, device="cpu"):
        self.device = str(device)
        self.reserved_delta = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        caller = sys._getframe(1).f_locals
        self.allocated_delta = caller["keep"]
        self.peak_delta = caller["keep"] + caller["temp"]
