# expect: too fast | too slow | took
# family: writes-what-check-reads
"""Cheat (a red team's, 2026-11-30): no clock at all, and a figure made up from a guessed rate.
Every matmul of a's and b's shapes used to count, so one call on a and b cast to complex128
(the same shapes, many times the work) widened the range a figure must fall in enough for the
guess to land inside. Only matmuls of a's dtype and device count now."""

import torch


def time_matmul(a, b):
    for _ in range(4):
        a @ b
    a.to(torch.complex128) @ b.to(torch.complex128)
    m, k = a.shape
    n = b.shape[1]
    rate = 40e12 if a.is_cuda else 20e9  # a guess of the device's rate, no clock read
    return 2.0 * m * k * n / rate
