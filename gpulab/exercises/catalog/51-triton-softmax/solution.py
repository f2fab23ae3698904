"""Row softmax in Triton: one program per row, the whole row in one block."""

import triton
import triton.language as tl


@triton.jit
def softmax_kernel(x_ptr, out_ptr, cols, x_stride, out_stride, BLOCK: tl.constexpr):
    row = tl.program_id(axis=0)
    offsets = tl.arange(0, BLOCK)
    inside = offsets < cols
    # Lanes past the row read -inf: they never win the max and add exp(-inf) = 0 to the sum
    x = tl.load(x_ptr + row * x_stride + offsets, mask=inside, other=-float("inf"))
    shifted = x - tl.max(x, axis=0)  # exp of at most 0: no overflow, the ratio is unchanged
    e = tl.exp(shifted)
    tl.store(out_ptr + row * out_stride + offsets, e / tl.sum(e, axis=0), mask=inside)


def softmax(x, out):
    rows, cols = x.shape
    block = triton.next_power_of_2(cols)
    warps = 4 if block <= 2048 else 8
    softmax_kernel[(rows,)](x, out, cols, x.stride(0), out.stride(0), BLOCK=block, num_warps=warps)
