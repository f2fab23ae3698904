# expect: expected
# family: mistake
"""Wrong: at an odd length the unpaired middle value is silently dropped."""

import torch


def tree_sum(x: torch.Tensor) -> torch.Tensor:
    x = x.reshape(-1)
    while x.numel() > 1:
        half = x.numel() // 2
        x = x[:half] + x[half : 2 * half]
    return x.reshape(())
