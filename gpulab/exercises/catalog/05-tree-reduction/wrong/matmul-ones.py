# expect: is not among the operations this exercise allows
# family: library
"""Wrong: a dot product with a vector of ones is a sum, done by the library in one call."""

import torch


def tree_sum(x: torch.Tensor) -> torch.Tensor:
    return x.reshape(-1) @ torch.ones_like(x.reshape(-1))
