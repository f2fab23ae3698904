# why: the add done in chunks through slices of out (views that write the caller's buffer), the last chunk shorter
"""Vector add in chunks of 2^16 elements, each torch.add writing a slice (a view) of out."""

import torch

CHUNK = 1 << 16


def vector_add(a: torch.Tensor, b: torch.Tensor, out: torch.Tensor) -> None:
    n = a.numel()
    for start in range(0, n, CHUNK):
        stop = min(start + CHUNK, n)
        torch.add(a[start:stop], b[start:stop], out=out[start:stop])
