# expect: torch.as_tensor makes a tensor over NumPy's or Python's memory
# family: escape
"""Shortcut: two trivial Triton copy kernels ferry x into NumPy memory (torch.as_tensor over a
NumPy buffer) and NumPy's result into out; NumPy does the per-column scale, bias and clamp."""

import numpy as np
import torch
import triton
import triton.language as tl


@triton.jit
def copy_kernel(src_ptr, dst_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(axis=0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(dst_ptr + offs, tl.load(src_ptr + offs, mask=m, other=0.0), mask=m)


def _to_numpy(t):
    buf = np.empty(t.shape, dtype=np.float32)
    n = t.numel()
    copy_kernel[(triton.cdiv(n, 1024),)](t, torch.as_tensor(buf), n, BLOCK=1024)
    return buf


def affine_clamp(x, scale, bias, lo, hi, out):
    xs, s, b = _to_numpy(x), _to_numpy(scale), _to_numpy(bias)
    res = np.clip(xs * s + b, np.float32(lo), np.float32(hi)).astype(np.float32)
    n = out.numel()
    copy_kernel[(triton.cdiv(n, 1024),)](torch.as_tensor(res), out, n, BLOCK=1024)
