# expect: your function started a thread | starts another thread or process
# family: escape
"""Shortcut (the measurement moved to a thread). GPU-only: not run on the CPU box. The copies and
the clock readings run in a worker thread the call waits for, where the check's per-thread
record of the call (the clock readings, pinnings and copies, in the order they ran) never
reaches; the figures come back through a list. Stopped on every machine by the grader's watch
around each call of the learner's function (own_work.Watch, built for every exercise by
run_check): a thread the learner's code starts during a call fails it, "your function started a
thread"."""

from __future__ import annotations

import statistics
import threading
import time

import torch


def _gbs(src: torch.Tensor, dst: torch.Tensor, repeats: int = 7) -> float:
    times = []
    for i in range(repeats + 1):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        dst.copy_(src, non_blocking=True)
        torch.cuda.synchronize()
        if i:
            times.append(time.perf_counter() - t0)
    return src.numel() * src.element_size() / statistics.median(times) / 1e9


def _measure(nbytes: int, into: dict[str, float]) -> None:
    dst = torch.empty(nbytes, dtype=torch.uint8, device="cuda")
    pageable = torch.ones(nbytes, dtype=torch.uint8)
    pinned = torch.empty(nbytes, dtype=torch.uint8, pin_memory=True)
    pinned.copy_(pageable)
    into.update(pageable=_gbs(pageable, dst), pinned=_gbs(pinned, dst))


def measure_h2d(nbytes: int) -> dict[str, float]:
    figures: dict[str, float] = {}
    worker = threading.Thread(target=_measure, args=(nbytes, figures))
    worker.start()
    worker.join()
    return figures
