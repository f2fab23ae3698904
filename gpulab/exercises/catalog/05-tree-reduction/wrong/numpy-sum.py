# expect: is not among the operations this exercise allows
# family: library
"""Wrong: leaves torch for NumPy, whose sum does the whole reduction in one call."""

import numpy as np
import torch


def tree_sum(x: torch.Tensor) -> torch.Tensor:
    return torch.tensor(np.float64(x.cpu().numpy().sum(dtype=np.float64)), device=x.device)
