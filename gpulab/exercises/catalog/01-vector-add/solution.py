"""Exercise 1, our solution: one library call that writes straight into `out`."""

import torch


def vector_add(a: torch.Tensor, b: torch.Tensor, out: torch.Tensor) -> None:
    # out= makes the sum land in the caller's tensor: no temporary, one pass over memory.
    torch.add(a, b, out=out)
