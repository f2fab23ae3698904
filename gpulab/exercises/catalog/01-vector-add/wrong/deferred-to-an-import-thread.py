# expect: started a thread when it was loaded
# family: escape
"""Shortcut (work deferred past the measured window): a slow add (a temporary, then a copy: an
honest version of it grades bronze here) on the front part of `out`, and the back 65% finished
by a worker thread started at import, after vector_add has returned. The timer stops on the
return; a checked call's own a + b (a full pass) gives the worker time to finish before `out`
is read; the unchecked two thirds are never looked at. The deferred part also runs while the
next contender is timed, taking memory bandwidth from it."""

import queue
import threading

import torch

_jobs: "queue.Queue" = queue.Queue()


def _slow(a, b, out):
    out.copy_(torch.add(a, b).mul_(1.0).add_(0.0))


def _worker():
    while True:
        a, b, out = _jobs.get()
        torch.add(a, b, out=out)
        _jobs.task_done()


threading.Thread(target=_worker, daemon=True).start()


def vector_add(a, b, out):
    _jobs.join()  # the previous call's part, long done
    n = a.numel()
    if n < 4_000_000:  # the checked sizes: all of it, now
        _slow(a, b, out)
        return
    h = int(n * 0.35)
    _slow(a[:h], b[:h], out[:h])
    _jobs.put((a[h:], b[h:], out[h:]))
