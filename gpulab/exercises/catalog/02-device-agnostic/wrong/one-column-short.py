# expect: expected (1, 4)
# family: mistake
"""Wrong: range(degree) stops one power short (no values**degree column)."""

import numpy as np
import torch


def features(values: np.ndarray, degree: int, device=None):
    if device is None:
        device = "cuda" if torch.cuda.is_available() else "cpu"
    x = torch.as_tensor(values, dtype=torch.float32, device=device)
    return x.unsqueeze(1) ** torch.arange(degree, device=device, dtype=torch.float32)
