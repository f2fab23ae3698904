# expect: is not among the operations this exercise allows
# family: library
"""Shortcut (a library does the work, through Triton's own code): the watch lets any frame of
Triton's do anything, and Triton's ConstexprFunction.__call__ calls whatever `fn` it holds. With
torch's addcmul and clamp_ as that `fn` (no Python frame of their own), the nearest frame is
Triton's: the operations run unrefused, while a one-element launch of the learner's kernel makes
the call look like theirs."""

import types

import torch
import triton
import triton.language as tl
from triton.runtime.jit import ConstexprFunction


@triton.jit
def affine_clamp_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offsets = tl.arange(0, BLOCK)
    inside = offsets < 1
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=inside, other=0.0), mask=inside)


def affine_clamp(x, scale, bias, lo, hi, out):
    affine_clamp_kernel[(1,)](x, out, BLOCK=16)
    ConstexprFunction.__call__(types.SimpleNamespace(fn=torch.addcmul), bias, x, scale, out=out)
    ConstexprFunction.__call__(types.SimpleNamespace(fn=torch.Tensor.clamp_), out, lo, hi)
