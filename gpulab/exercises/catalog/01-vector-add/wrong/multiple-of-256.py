# expect: never written
# family: mistake
import torch


def vector_add(a: torch.Tensor, b: torch.Tensor, out: torch.Tensor) -> None:
    whole = a.numel() // 256 * 256  # right only when the length is a multiple of 256
    out[:whole] = a[:whole] + b[:whole]
