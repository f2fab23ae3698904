# expect: acts as an array or a number
# family: lazy
"""Shortcut (a result that computes when it is read). GPU-only: not run on the CPU box. The call
returns at once with a float subclass holding a and b; the timing (warm-up, synchronize, the
median of ten calls) runs the first time the check compares or converts the figure, after the
call, where the check's watch of the learner's matmuls, which stamps each one for the range the
figure must fall in, is already off. Stopped on every machine by the grader's watch around each
call of the learner's function (own_work.Watch, built for every exercise by run_check): a
returned value that acts as a number but is no plain one fails the call (own_work.not_plain)."""

from __future__ import annotations

import statistics
import time

import torch


def _median_seconds(a: torch.Tensor, b: torch.Tensor, runs: int = 10) -> float:
    for _ in range(3):
        a @ b
    torch.cuda.synchronize()
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        a @ b
        torch.cuda.synchronize()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


class _Seconds(float):
    def __new__(cls, a: torch.Tensor, b: torch.Tensor) -> _Seconds:
        self = super().__new__(cls, 1.0)
        self.operands = (a, b)
        self.value: float | None = None
        return self

    def _read(self) -> float:
        if self.value is None:
            self.value = _median_seconds(*self.operands)
        return self.value

    def __float__(self) -> float:
        return self._read()

    def __gt__(self, other: float) -> bool:
        return self._read() > other

    def __lt__(self, other: float) -> bool:
        return self._read() < other


def time_matmul(a: torch.Tensor, b: torch.Tensor, runs: int = 10) -> float:
    return _Seconds(a, b)
