# expect: too fast | too slow | took
# family: writes-what-check-reads
"""Cheat: no clock at all. The figure must lie between half the fastest and twice the slowest of
the learner's own matmuls as the check timed them, and every matmul counts, whatever its
operands: one call on sixteen stacked copies of a widens that range sixteenfold, and a made-up
constant falls inside it. Only the fastest call is held against the check's own."""

import torch


def time_matmul(a, b):
    # no clock at all: a few matmuls for the check to watch, one of them 16 times the work, so
    # the range a figure must fall in (half the fastest to twice the slowest) is wide
    for _ in range(3):
        a @ b
    torch.cat([a] * 16) @ b
    return 2e-3
