# expect: dtype torch.float64
# family: mistake
"""Wrong: keeps NumPy's float64 instead of the float32 that was asked for."""

import numpy as np
import torch


def features(values: np.ndarray, degree: int, device=None):
    if device is None:
        device = "cuda" if torch.cuda.is_available() else "cpu"
    x = torch.as_tensor(values.astype(np.float64), device=device)
    return x.unsqueeze(1) ** torch.arange(degree + 1, device=device, dtype=torch.float64)
