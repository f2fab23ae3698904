# expect: acts as an array or a number
# family: lazy
"""Cheat: returns a float subclass whose value is computed by torch.sum only when the grader
calls float() on it, after the call has returned and the refusals are off."""

import torch


class _Later(float):
    def __new__(cls, x):
        made = super().__new__(cls, 0.0)
        made.x = x
        return made

    def __float__(self):
        return float(torch.sum(self.x, dtype=torch.float64))


def tree_sum(x):
    return _Later(x)
