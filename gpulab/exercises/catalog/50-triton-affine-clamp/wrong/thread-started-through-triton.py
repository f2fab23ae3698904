# expect: starts another thread or process
# family: escape
"""Shortcut (work moved to a thread, started through Triton's own code): torch's modes follow
one thread, and the watch lets Triton's frames start threads (its compiler may). Triton's
ConstexprFunction.__call__ calls whatever `fn` it holds: handed Thread.start, the nearest frame
is Triton's, and the thread runs torch's addcmul and clamp_ where no mode sees them."""

import functools
import threading
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


def _work(x, scale, bias, lo, hi, out):
    torch.addcmul(bias, x, scale, out=out)
    out.clamp_(lo, hi)


def affine_clamp(x, scale, bias, lo, hi, out):
    affine_clamp_kernel[(1,)](x, out, BLOCK=16)
    t = threading.Thread(target=functools.partial(_work, x, scale, bias, lo, hi, out))
    ConstexprFunction.__call__(types.SimpleNamespace(fn=threading.Thread.start), t)
    t.join()
