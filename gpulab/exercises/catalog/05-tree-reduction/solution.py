"""A tree reduction: each level adds the second half of the values onto the first half."""

from __future__ import annotations

import torch


def tree_sum(x: torch.Tensor) -> torch.Tensor:
    """The sum of all values of x, as a 0-dim tensor on x's device, in log2(n) levels."""
    x = x.reshape(-1)
    while x.numel() > 1:
        m = x.numel()
        half = m // 2
        # Contiguous halves: every level reads and writes memory in order (coalesced on a GPU).
        # Pairing the front with the back leaves the middle value alone when m is odd; it
        # rides along to the next level.
        y = x[:half] + x[m - half :]
        if m % 2:
            y = torch.cat((y, x[half : half + 1]))
        x = y
    return x.reshape(())
