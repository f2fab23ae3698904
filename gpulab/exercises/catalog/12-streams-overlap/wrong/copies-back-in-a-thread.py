# expect: your function started a thread | starts another thread or process
# family: escape
"""Shortcut (the overlap from a thread, not from streams). GPU-only: not run on the CPU box.
Every chunk is copied in and computed on the current stream, and a worker thread copies each
finished output back to the host while the next chunk computes; the call joins the thread before
returning. The copies back run where the check's per-thread torch mode never records them.
Stopped on every machine by the grader's watch around each call of the learner's function
(own_work.Watch, built for every exercise by run_check): a thread the learner's code starts
during a call fails it, "your function started a thread"."""

from __future__ import annotations

import queue
import threading

import torch


def _copy_back(todo: queue.Queue) -> None:
    while True:
        item = todo.get()
        if item is None:
            return
        out, y = item
        out.copy_(y)


def pipeline(chunks, outs, step):
    todo: queue.Queue = queue.Queue()
    worker = threading.Thread(target=_copy_back, args=(todo,))
    worker.start()
    for chunk, out in zip(chunks, outs, strict=True):
        y = step(chunk.to("cuda", non_blocking=True))
        torch.cuda.current_stream().synchronize()
        todo.put((out, y))
    todo.put(None)
    worker.join()
