"""The Triton kernels the triton-kernels experiment measures: a vector add and a fused row
softmax, the two the Triton exercises ask for.

Imported only inside the experiment's run (it imports Triton at the top, which the UI process
and the catalog must never do). Triton compiles each kernel for the GPU on its first launch with
new constants (seconds), then reuses it from its cache.
"""

from __future__ import annotations

from typing import Any

import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(axis=0) * BLOCK + tl.arange(0, BLOCK)
    inside = offsets < n
    x = tl.load(x_ptr + offsets, mask=inside)
    y = tl.load(y_ptr + offsets, mask=inside)
    tl.store(out_ptr + offsets, x + y, mask=inside)


@triton.jit
def softmax_kernel(x_ptr, out_ptr, cols, x_stride, out_stride, BLOCK: tl.constexpr):
    row = tl.program_id(axis=0)
    offsets = tl.arange(0, BLOCK)
    inside = offsets < cols
    x = tl.load(x_ptr + row * x_stride + offsets, mask=inside, other=-float("inf"))
    e = tl.exp(x - tl.max(x, axis=0))
    tl.store(out_ptr + row * out_stride + offsets, e / tl.sum(e, axis=0), mask=inside)


ADD_BLOCK = 1024


def add(x: Any, y: Any, out: Any) -> Any:
    """out = x + y: triton.cdiv(n, 1024) programs of 1024 elements."""
    n = x.numel()
    add_kernel[(triton.cdiv(n, ADD_BLOCK),)](x, y, out, n, BLOCK=ADD_BLOCK)
    return out


def softmax(x: Any, out: Any) -> Any:
    """A softmax along each row of a 2-D tensor: one program per row, the row in one block."""
    rows, cols = x.shape
    block = triton.next_power_of_2(cols)
    warps = 4 if block <= 2048 else 8 if block <= 8192 else 16
    softmax_kernel[(rows,)](x, out, cols, x.stride(0), out.stride(0), BLOCK=block, num_warps=warps)
    return out
