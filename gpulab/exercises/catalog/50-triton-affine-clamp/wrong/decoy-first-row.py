# expect: is not among the operations this exercise allows
# family: library
"""Shortcut (a library does the work, behind a decoy): the learner's kernel computes the first
row, so a Triton launch is seen in every call, and torch computes every other row."""

import torch
import triton
import triton.language as tl


@triton.jit
def affine_clamp_kernel(x_ptr, scale_ptr, bias_ptr, out_ptr, n, cols, lo, hi, BLOCK: tl.constexpr):
    offsets = tl.program_id(axis=0) * BLOCK + tl.arange(0, BLOCK)
    inside = offsets < n
    col = offsets % cols
    x = tl.load(x_ptr + offsets, mask=inside, other=0.0)
    y = x * tl.load(scale_ptr + col, mask=inside, other=0.0)
    y = y + tl.load(bias_ptr + col, mask=inside, other=0.0)
    tl.store(out_ptr + offsets, tl.minimum(tl.maximum(y, lo), hi), mask=inside)


def affine_clamp(x, scale, bias, lo, hi, out):
    cols = x.shape[-1]
    affine_clamp_kernel[(triton.cdiv(cols, 1024),)](
        x, scale, bias, out, cols, cols, lo, hi, BLOCK=1024
    )
    if x.shape[0] > 1:
        torch.clamp(torch.addcmul(bias, x[1:], scale), lo, hi, out=out[1:])
