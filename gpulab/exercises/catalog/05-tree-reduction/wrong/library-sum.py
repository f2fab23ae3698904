# expect: is not among the operations this exercise allows
# family: library
"""Wrong: the library's one call. Correct to the last bit, and it teaches nothing."""

import torch


def tree_sum(x: torch.Tensor) -> torch.Tensor:
    return x.sum()
