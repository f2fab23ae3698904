# expect: too fast | too slow | took
# family: writes-what-check-reads
"""Shortcut (a figure with no clock, the span widened by an einsum of a and b that is no
product): `torch.einsum("ij,kl->ikl", a, b)` takes a and b themselves, so it counted as one
of the learner's matmuls, and it does k times a @ b's work; a made-up constant fell inside the
span it stretched. Before the fix: pass. A call counts now only when its output has a @ b's
size."""

import torch


def time_matmul(a, b):
    for _ in range(3):
        a @ b
    torch.einsum("ij,kl->ikl", a, b)
    return 0.05
