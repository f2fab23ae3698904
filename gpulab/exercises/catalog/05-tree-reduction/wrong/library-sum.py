# expect: torch.Tensor.sum does the whole reduction in one call
"""Wrong: the library's one call. Correct to the last bit, and it teaches nothing."""

import torch


def tree_sum(x: torch.Tensor) -> torch.Tensor:
    return x.sum()
