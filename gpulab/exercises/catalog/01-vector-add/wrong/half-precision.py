# expect: wrong
# family: mistake
import torch


def vector_add(a: torch.Tensor, b: torch.Tensor, out: torch.Tensor) -> None:
    out.copy_(a.half() + b.half())  # float16 keeps 11 bits of the 24: not the float32 sum
