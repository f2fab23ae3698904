# expect: asked for sys.setprofile, whose callback
# family: writes-what-check-reads
"""Cheat: measures no memory. __enter__ installs a profile function (sys.setprofile) that sees
every Python call; the workload's allocator is numpy.full (or torch.full on a GPU), and its
`shape` argument is read from the frame (by a name built at run time: the source scan names
the frame readers, and what this file tests is the rule on installing a profiler). kept = the
first allocation, peak = the first two. __exit__ takes the profile function away again.
Now refused where it is set: a hook's callback is handed every frame, and the grader's
references are one f_back away (sandbox.refuse_walks)."""

import inspect
import sys


class MemoryTracker:
    def __init__(self, device="cpu"):
        self.device = str(device)
        self.allocated_delta = 0
        self.peak_delta = 0
        self.reserved_delta = None
        self._sizes = []

    def _seen(self, frame, event, arg):
        if event == "call" and frame.f_code.co_name == "full":
            shape = getattr(inspect, "getarg" + "values")(frame).locals.get("shape")
            if shape is not None:
                n = 1
                for d in shape if isinstance(shape, (tuple, list)) else (shape,):
                    n *= int(d)
                self._sizes.append(n)

    def __enter__(self):
        self._old = sys.getprofile()
        sys.setprofile(self._seen)
        return self

    def __exit__(self, *exc):
        sys.setprofile(self._old)
        s = self._sizes + [0, 0]
        self.allocated_delta = s[0]
        self.peak_delta = s[0] + s[1]
        if self.device != "cpu":
            self.reserved_delta = s[0] + s[1]
