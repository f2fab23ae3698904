# expect: hands the tensor's values to Python
# family: escape
"""Shortcut (an exit to Python, taken through Triton's own code): the watch lets Triton's frames
do what its launcher needs, and Triton's ConstexprFunction.__call__ calls whatever `fn` it holds.
Handed Tensor.copy_ and Tensor.map2_, the nearest frame is Triton's: x is copied into out and a
Python callback computes every element from it and the broadcast scale and bias."""

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
    ConstexprFunction.__call__(types.SimpleNamespace(fn=torch.Tensor.copy_), out, x)
    ConstexprFunction.__call__(
        types.SimpleNamespace(fn=torch.Tensor.map2_),
        out,
        scale.expand_as(out),
        bias.expand_as(out),
        lambda v, s, b: min(max(v * s + b, lo), hi),
    )
