# expect: off by
# family: mistake
"""Wrong: sums in float16 to go faster: 11 bits of mantissa and a maximum of 65504."""

import torch


def tree_sum(x: torch.Tensor) -> torch.Tensor:
    x = x.reshape(-1).half()
    while x.numel() > 1:
        m = x.numel()
        half = m // 2
        y = x[:half] + x[m - half :]
        x = torch.cat((y, x[half : half + 1])) if m % 2 else y
    return x.float().reshape(())
