# why: the levels added in place in one scratch copy of x (add_ on its own halves, the middle value of an odd level left where the next level finds it), never touching x itself
"""A tree reduction in one scratch buffer: each level adds the back half onto the front half in
place, so no level allocates."""

import torch


def tree_sum(x: torch.Tensor) -> torch.Tensor:
    buf = x.reshape(-1).clone()
    n = buf.numel()
    while n > 1:
        half = n // 2
        # front [0, half) += back [n - half, n); an odd level's middle value, at index half,
        # is inside the next level's [0, n - half)
        buf[:half].add_(buf[n - half : n])
        n -= half
    return buf[0]
