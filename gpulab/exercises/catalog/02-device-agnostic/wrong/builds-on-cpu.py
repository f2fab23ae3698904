# expect: built on the CPU and then moved
# family: mistake
"""Wrong: builds both tensors on the CPU, then copies them to the device."""

import numpy as np
import torch


def features(values: np.ndarray, degree: int, device=None):
    if device is None:
        device = "cuda" if torch.cuda.is_available() else "cpu"
    x = torch.as_tensor(values, dtype=torch.float32).to(device)
    powers = torch.arange(degree + 1, dtype=torch.float32).to(device)
    return x.unsqueeze(1) ** powers


def pick_device():
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")
