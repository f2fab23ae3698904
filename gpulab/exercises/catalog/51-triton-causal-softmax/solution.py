"""Causal softmax in Triton: one program per row, the whole row in one block, the future masked."""

import triton
import triton.language as tl


@triton.jit
def causal_softmax_kernel(x_ptr, out_ptr, T, scale, BLOCK: tl.constexpr):
    row = tl.program_id(axis=0)  # over batch * T rows
    i = row % T  # the row's position in its matrix: it sees columns 0..i
    cols = tl.arange(0, BLOCK)
    base = row.to(tl.int64) * T
    seen = cols <= i  # implies cols < T
    # The future and the padding read -inf: they never win the max and add exp(-inf) = 0 to the
    # sum, and they are never loaded from memory at all
    x = tl.load(x_ptr + base + cols, mask=seen, other=-float("inf")) * scale
    e = tl.exp(x - tl.max(x, axis=0))  # the max of at least one real value: no overflow, no NaN
    # Every column of the row is stored: the future's exp(-inf) = 0 writes the zeros
    tl.store(out_ptr + base + cols, e / tl.sum(e, axis=0), mask=cols < T)


def causal_softmax(x, scale, out):
    batch, t, _ = x.shape
    block = triton.next_power_of_2(t)
    warps = 4 if block <= 2048 else 8
    causal_softmax_kernel[(batch * t,)](x, out, t, scale, BLOCK=block, num_warps=warps)
