# expect: a float16 accumulator? | expected
# family: loose-property
"""Shortcut (float32 accumulation met loosely): the running sum is float32, as asked, but each K
step's tile product is taken with a float16 result (`tl.dot(..., out_dtype=tl.float16)`, the
faster tensor-core path on many GPUs) and only then added to it: every step's partial sum of
BK products is rounded to 11 bits before it reaches the float32 accumulator. A product whose K
fits in one step comes out as float16 numbers, which the check's comparison names."""

import torch
import triton
import triton.language as tl


@triton.autotune(
    configs=[
        triton.Config({"BM": 128, "BN": 256, "BK": 64, "GROUP": 8}, num_stages=3, num_warps=8),
        triton.Config({"BM": 128, "BN": 128, "BK": 64, "GROUP": 8}, num_stages=4, num_warps=4),
        triton.Config({"BM": 64, "BN": 128, "BK": 32, "GROUP": 8}, num_stages=4, num_warps=4),
        triton.Config({"BM": 32, "BN": 32, "BK": 32, "GROUP": 8}, num_stages=2, num_warps=2),
    ],
    key=["M", "N", "K"],
)
@triton.jit
def matmul_kernel(
    a_ptr, b_ptr, c_ptr, M, N, K,
    sam, sak, sbk, sbn, scm, scn,
    BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, GROUP: tl.constexpr,
):  # fmt: skip
    # Programs in groups of GROUP rows of tiles: neighbours share tiles of a and b in L2
    pid = tl.program_id(axis=0)
    tiles_m, tiles_n = tl.cdiv(M, BM), tl.cdiv(N, BN)
    per_group = GROUP * tiles_n
    first_m = (pid // per_group) * GROUP
    rows_here = min(tiles_m - first_m, GROUP)
    pid_m = first_m + (pid % per_group) % rows_here
    pid_n = (pid % per_group) // rows_here

    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        kk = k + rk
        a = tl.load(
            a_ptr + rm[:, None] * sam + kk[None, :] * sak,
            mask=(rm[:, None] < M) & (kk[None, :] < K),
            other=0.0,
        )
        b = tl.load(
            b_ptr + kk[:, None] * sbk + rn[None, :] * sbn,
            mask=(kk[:, None] < K) & (rn[None, :] < N),
            other=0.0,
        )
        acc += tl.dot(a, b, out_dtype=tl.float16).to(tl.float32)
    tl.store(
        c_ptr + rm[:, None] * scm + rn[None, :] * scn,
        acc,
        mask=(rm[:, None] < M) & (rn[None, :] < N),
    )


def matmul(a: torch.Tensor, b: torch.Tensor, out: torch.Tensor) -> None:
    M, K = a.shape
    N = b.shape[1]

    def grid(meta):
        return (triton.cdiv(M, meta["BM"]) * triton.cdiv(N, meta["BN"]),)

    matmul_kernel[grid](
        a, b, out, M, N, K,
        a.stride(0), a.stride(1), b.stride(0), b.stride(1), out.stride(0), out.stride(1),
    )  # fmt: skip
