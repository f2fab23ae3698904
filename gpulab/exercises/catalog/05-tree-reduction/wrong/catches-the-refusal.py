# expect: is not among the operations this exercise allows
# family: library
"""Wrong: tries the library first and falls back to a tree only when the check refuses it."""

import torch


def _tree(x: torch.Tensor) -> torch.Tensor:
    x = x.reshape(-1)
    while x.numel() > 1:
        m = x.numel()
        half = m // 2
        y = x[:half] + x[m - half :]
        x = torch.cat((y, x[half : half + 1])) if m % 2 else y
    return x.reshape(())


def tree_sum(x: torch.Tensor) -> torch.Tensor:
    try:
        return torch.sum(x)
    except Exception:  # noqa: BLE001 - on purpose: the learner hides the refusal
        return _tree(x)
