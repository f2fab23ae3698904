# expect: is not among the operations this exercise allows
# family: library
"""Shortcut (a library does the work): torch's addcmul and clamp in the wrapper. The numbers are
right; no kernel of the learner's ran."""

import torch


def affine_clamp(x, scale, bias, lo, hi, out):
    torch.addcmul(bias, x, scale, out=out)
    out.clamp_(lo, hi)
