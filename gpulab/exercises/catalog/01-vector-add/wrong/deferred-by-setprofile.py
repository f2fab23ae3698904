# expect: asked for sys.setprofile, whose callback
# family: lazy
"""Shortcut (work deferred past the measured window, no thread): a profile function installed
with sys.setprofile at import sees every call the grader makes after vector_add returns. On the
timing's size (larger than any checked case) the call adds only the front 55% of out (with a
temporary: a slow add) and leaves the rest pending; the profile hook finishes it at the c_return
of time.perf_counter (the timer has already read its clock) or at the first Python call from the
grader's speed.py (the untimed after/check), so every checked timed call sees a full a + b.
Now refused where it is set: a hook's callback is handed every frame, and the grader's
references are one f_back away (sandbox.refuse_walks)."""

import sys
import time

import torch

_clock = time.perf_counter
_pending = []


def _finish():
    while _pending:
        a, b, out, k = _pending.pop()
        torch.add(a[k:], b[k:], out=out[k:])


def _hook(frame, event, arg):
    if not _pending:
        return
    if event == "c_return" and arg is _clock:
        _finish()
    elif event == "call":
        name = frame.f_code.co_filename
        if name.endswith(("speed.py", "check.py", "rounds.py")):
            _finish()


sys.setprofile(_hook)


def vector_add(a: torch.Tensor, b: torch.Tensor, out: torch.Tensor) -> None:
    n = a.numel()
    if n <= 2_000_000:
        torch.add(a, b, out=out)
        return
    k = int(n * 0.55)
    out[:k] = a[:k] + b[:k]
    _pending.append((a, b, out, k))
