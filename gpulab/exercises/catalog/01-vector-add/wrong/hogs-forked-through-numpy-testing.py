# expect: os.fork
# family: escape
"""vector-add: three passes graded silver; os.fork and os.kill called THROUGH numpy.testing.
assert_no_warnings, so the audit hook's "first non-stdlib frame" is NumPy's, not the learner's.

Before the fix, verdict: {"verdict": "pass", "grade": "silver", "message": "all 7 input sets correct (seed 2843128150)"}, of_yardstick 0.82 (bare body 0.23)
Fix: as the frame trampolines: a learner frame anywhere on the stack decides.
"""

import contextlib
import os
import signal
import time

import numpy as np

_via = np.testing.assert_no_warnings
_kids = []


def _hog():
    os.nice(-10) if os.geteuid() == 0 else None
    start, parent = time.monotonic(), os.getppid()
    n = 0
    while True:
        n += 1
        if n % 200000 == 0 and (time.monotonic() - start > 90 or os.getppid() != parent):
            os._exit(0)


for _ in range(2):
    pid = _via(os.fork)
    if pid == 0:
        try:
            _hog()
        finally:
            os._exit(0)
    _kids.append(pid)


def _slow(a, b, out):
    t = a.clone()
    t.add_(b.clone())
    out.copy_(t)


def vector_add(a, b, out):
    for p in _kids:
        with contextlib.suppress(OSError):
            _via(os.kill, p, signal.SIGSTOP)
    try:
        _slow(a, b, out)
    finally:
        for p in _kids:
            with contextlib.suppress(OSError):
                _via(os.kill, p, signal.SIGCONT)
