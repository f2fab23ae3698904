# expect: changed its input
# family: mistake
"""Wrong: adds in place into the caller's tensor, destroying its data."""

import torch


def tree_sum(x: torch.Tensor) -> torch.Tensor:
    x = x.reshape(-1)
    m = x.numel()
    while m > 1:
        half = m // 2
        x[:half] += x[m - half : m]
        m = m - half
    return x[0].clone()
