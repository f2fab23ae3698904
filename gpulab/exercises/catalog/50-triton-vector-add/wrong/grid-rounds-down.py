# expect: never written
"""The grid is n // BLOCK programs: the tail after the last whole block is never computed."""

import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(axis=0) * BLOCK + tl.arange(0, BLOCK)
    inside = offsets < n
    x = tl.load(x_ptr + offsets, mask=inside)
    tl.store(out_ptr + offsets, x + tl.load(y_ptr + offsets, mask=inside), mask=inside)


def add(x, y, out):
    n = x.numel()
    add_kernel[(max(1, n // 1024),)](x, y, out, n, BLOCK=1024)
