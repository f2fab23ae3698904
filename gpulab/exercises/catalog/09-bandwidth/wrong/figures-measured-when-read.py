# expect: acts as an array or a number
# family: lazy
"""Shortcut (figures that compute when they are read). GPU-only: not run on the CPU box. The call
returns at once with a dict of float subclasses; each measures its copies (warm-up, synchronize,
the median) the first time the check converts or compares it, after the call, where the check's
record of what the call ran (the clock readings, the pinnings and the copies in order) has
ended. Stopped on every machine by the grader's watch around each call of the learner's function
(own_work.Watch, built for every exercise by run_check): a returned value that acts as a number
but is no plain one, inside a dict too, fails the call (own_work.not_plain)."""

from __future__ import annotations

import statistics
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


class _Figure(float):
    def __new__(cls, src: torch.Tensor, dst: torch.Tensor) -> _Figure:
        self = super().__new__(cls, 1.0)
        self.copy = (src, dst)
        self.value: float | None = None
        return self

    def _read(self) -> float:
        if self.value is None:
            self.value = _gbs(*self.copy)
        return self.value

    def __float__(self) -> float:
        return self._read()

    def __gt__(self, other: float) -> bool:
        return self._read() > other

    def __lt__(self, other: float) -> bool:
        return self._read() < other


def measure_h2d(nbytes: int) -> dict[str, float]:
    dst = torch.empty(nbytes, dtype=torch.uint8, device="cuda")
    pageable = torch.ones(nbytes, dtype=torch.uint8)
    pinned = torch.empty(nbytes, dtype=torch.uint8, pin_memory=True)
    pinned.copy_(pageable)
    return {"pageable": _Figure(pageable, dst), "pinned": _Figure(pinned, dst)}
