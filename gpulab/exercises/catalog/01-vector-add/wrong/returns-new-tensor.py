# expect: returned a new tensor
# family: mistake
import torch


def vector_add(a: torch.Tensor, b: torch.Tensor, out: torch.Tensor) -> torch.Tensor:
    return a + b  # the caller's `out` is never written
