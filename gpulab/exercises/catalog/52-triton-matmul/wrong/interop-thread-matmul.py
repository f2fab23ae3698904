# expect: started a thread when it was loaded
# family: escape
"""Shortcut (a red team's, 2026-11-30): no tiled kernel. torch.jit.fork at import starts a loop
on torch's inter-op threads (no Thread object), where the check's per-thread modes do not
reach; it runs torch.matmul for each call, beside a one-program decoy launch of a Triton kernel
(passed on the interpreter, before the rule)."""

import time

import torch
import triton
import triton.language as tl

_job = {"args": None, "done": False, "until": time.monotonic() + 3.0}


def _serve(n: int) -> int:
    while time.monotonic() < _job["until"]:
        args = _job["args"]
        if args is None:
            time.sleep(0.0005)
            continue
        a, b, out = args
        torch.matmul(a.float(), b.float(), out=out)
        _job["args"], _job["done"] = None, True
    return n


_fut = torch.jit.fork(_serve, 0)


@triton.jit
def matmul_kernel(a_ptr, c_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    v = tl.load(c_ptr + offs, mask=offs < 1, other=0.0)
    tl.store(c_ptr + offs, v, mask=offs < 1)


def matmul(a, b, out):
    _job["done"], _job["args"] = False, (a, b, out)
    while not _job["done"]:
        time.sleep(0)
    matmul_kernel[(1,)](a, out, BLOCK=16)
