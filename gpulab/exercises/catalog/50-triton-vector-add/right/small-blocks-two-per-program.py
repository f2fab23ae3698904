# why: BLOCK=128 with each program doing two blocks in a static loop (a smaller block, a loop)
"""Vector add with small blocks, two per program."""

import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr, PER_PROGRAM: tl.constexpr):
    start = tl.program_id(axis=0) * BLOCK * PER_PROGRAM
    for j in tl.static_range(PER_PROGRAM):
        offsets = start + j * BLOCK + tl.arange(0, BLOCK)
        inside = offsets < n
        x = tl.load(x_ptr + offsets, mask=inside, other=0.0)
        y = tl.load(y_ptr + offsets, mask=inside, other=0.0)
        tl.store(out_ptr + offsets, x + y, mask=inside)


def add(x, y, out):
    n = x.numel()
    grid = (triton.cdiv(n, 128 * 2),)
    add_kernel[grid](x, y, out, n, BLOCK=128, PER_PROGRAM=2)
