# expect: os.fork
# family: escape
"""vector-add: three passes over memory graded gold by hog processes that only run between calls.

Trick (family: "the yardstick slowed from outside the call"; same as tree-reduction-stopped-hog.py):
two CPU-hog children forked at import at nice -10, SIGSTOPped while vector_add runs and SIGCONTed
as it returns, so they eat the CPU only in the yardstick's and library's turns.

Before the fix, verdict (seed 3596206101): {"verdict": "pass", "message": "all 7 input sets correct (seed 3596206101)", "grade": "gold"}
of_yardstick median 1.67 (lo 0.53); the same three-pass body without the hogs (seed 719190507): 0.25, no medal.
"""

import contextlib
import os
import signal
import time

_kids = []


def _hog():
    os.nice(-10)
    start, parent = time.monotonic(), os.getppid()
    n = 0
    while True:
        n += 1
        if n % 200000 == 0 and (time.monotonic() - start > 90 or os.getppid() != parent):
            os._exit(0)


for _ in range(2):
    pid = os.fork()
    if pid == 0:
        try:
            _hog()
        finally:
            os._exit(0)
    _kids.append(pid)


def _slow(a, b, out):
    # three passes where one will do: a temporary, a copy, an in-place add of a clone
    t = a.clone()
    t.add_(b.clone())
    out.copy_(t)


def vector_add(a, b, out):
    for p in _kids:
        with contextlib.suppress(OSError):
            os.kill(p, signal.SIGSTOP)
    try:
        _slow(a, b, out)
    finally:
        for p in _kids:
            with contextlib.suppress(OSError):
                os.kill(p, signal.SIGCONT)
