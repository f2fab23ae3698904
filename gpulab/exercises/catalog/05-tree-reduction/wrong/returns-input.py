# expect: expected one number
# family: mistake
"""Wrong: returns the input instead of reducing it."""

import torch


def tree_sum(x: torch.Tensor) -> torch.Tensor:
    return x
