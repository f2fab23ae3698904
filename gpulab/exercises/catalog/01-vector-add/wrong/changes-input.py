# expect: changed its input a
# family: mistake
import torch


def vector_add(a: torch.Tensor, b: torch.Tensor, out: torch.Tensor) -> None:
    a.add_(b)  # in place on the caller's input
    out.copy_(a)
