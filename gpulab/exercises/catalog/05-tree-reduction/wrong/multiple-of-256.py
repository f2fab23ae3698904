# expect: sum = 0.0
# family: mistake
"""Wrong: only whole blocks of 256 values are summed; the tail (and any short input) is lost."""

import torch


def tree_sum(x: torch.Tensor) -> torch.Tensor:
    x = x.reshape(-1)
    blocks = x[: x.numel() // 256 * 256].reshape(-1, 256)
    if blocks.numel() == 0:
        return torch.zeros((), device=x.device)
    while blocks.shape[1] > 1:
        half = blocks.shape[1] // 2
        blocks = blocks[:, :half] + blocks[:, half:]
    partial = blocks.reshape(-1)
    while partial.numel() > 1:
        m = partial.numel()
        half = m // 2
        y = partial[:half] + partial[m - half :]
        partial = torch.cat((y, partial[half : half + 1])) if m % 2 else y
    return partial.reshape(())
