# expect: too fast | too slow | took
# family: writes-what-check-reads
"""Shortcut (a figure with no clock, the span widened by a call that sleeps inside the check's
timing of it): a @ b on `a.as_subclass(Slow)`, whose `__torch_function__` sleeps 0.2 s before
the product, so the check's own stamp of that matmul (taken around the call it watches) held
the sleep, and a made-up constant fell inside the span. Before the fix: pass. A tensor
subclass's matmul is not counted now: only plain tensors'."""

import time

import torch


class Slow(torch.Tensor):
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        time.sleep(0.2)
        return super().__torch_function__(func, types, args, kwargs)


def time_matmul(a, b):
    for _ in range(3):
        a @ b
    a.as_subclass(Slow) @ b
    return 0.05
