# expect: out[0] = nan
# family: mistake
import torch


def vector_add(a: torch.Tensor, b: torch.Tensor, out: torch.Tensor) -> None:
    out[1:] = a[1:] + b[1:]  # off by one: element 0 is never written
