# expect: a tensor on the wrong device
# family: mistake
"""Wrong: the exponents are created on the CPU, whatever device the values are on."""

import numpy as np
import torch


def features(values: np.ndarray, degree: int, device=None):
    if device is None:
        device = "cuda" if torch.cuda.is_available() else "cpu"
    x = torch.as_tensor(values, dtype=torch.float32, device=device)
    return x.unsqueeze(1) ** torch.arange(degree + 1, dtype=torch.float32)


def pick_device():
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")
