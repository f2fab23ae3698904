# expect: expected
# family: loose-property
"""Shortcut (the max-subtraction met loosely): each row's exponentials are taken relative to its
first score (always visible under the causal mask) instead of its max, which saves the row's
max reduction; exp overflows only when a later score exceeds the first by about 88. Passed until a case
put each row's first score at -100 and its diagonal at 100 (2026-11-30)."""

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
    first = tl.load(x_ptr + base) * scale
    e = tl.exp(x - first)  # the max of at least one real value: no overflow, no NaN
    # Every column of the row is stored: the future's exp(-inf) = 0 writes the zeros
    tl.store(out_ptr + base + cols, e / tl.sum(e, axis=0), mask=cols < T)


def causal_softmax(x, scale, out):
    batch, t, _ = x.shape
    block = triton.next_power_of_2(t)
    warps = 4 if block <= 2048 else 8
    causal_softmax_kernel[(batch * t,)](x, out, t, scale, BLOCK=block, num_warps=warps)
