# expect: reads or switches off torch's function and dispatch modes
# family: timed-vs-checked
"""Shortcut (timed told from checked, by a mode): a checked call is guessed to be one watched by
a torch function mode, so the learner's (naive, one-tile-per-program) kernel runs only while
one is on the stack; with none on, torch.matmul (cuBLAS) does the product and the kernel is
launched on a 1 x 1 corner to be seen."""

import torch
import triton
import triton.language as tl


@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, sam, sak, sbk, sbn, scm, scn,
                  BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):  # fmt: skip
    pid_m = tl.program_id(axis=0)
    pid_n = tl.program_id(axis=1)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        kk = k + rk
        a = tl.load(a_ptr + rm[:, None] * sam + kk[None, :] * sak,
                    mask=(rm[:, None] < M) & (kk[None, :] < K), other=0.0)  # fmt: skip
        b = tl.load(b_ptr + kk[:, None] * sbk + rn[None, :] * sbn,
                    mask=(kk[:, None] < K) & (rn[None, :] < N), other=0.0)  # fmt: skip
        acc = tl.dot(a, b, acc)
    tl.store(c_ptr + rm[:, None] * scm + rn[None, :] * scn, acc,
             mask=(rm[:, None] < M) & (rn[None, :] < N))  # fmt: skip


def _launch(a, b, out, M, N, K):
    grid = (triton.cdiv(M, 32), triton.cdiv(N, 32))
    matmul_kernel[grid](a, b, out, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                        out.stride(0), out.stride(1), BM=32, BN=32, BK=32)  # fmt: skip


def matmul(a, b, out):
    M, K = a.shape
    N = b.shape[1]
    if torch._C._len_torch_function_stack() > 0:
        _launch(a, b, out, M, N, K)
        return
    _launch(a, b, out, 1, 1, K)
    out.copy_(torch.matmul(a, b))
