# expect: changed its input a
# family: writes-what-check-reads
"""Cheat: adds in place into the caller's `a` (wrong/changes-input.py), and silences the
input check by rebinding torch.equal during the call (the grader's run() reads it after the
call, before its Guard puts it back)."""

import torch


def vector_add(a, b, out):
    a.add_(b)  # in place on the caller's input
    out.copy_(a)
    torch.equal = lambda x, y: True
