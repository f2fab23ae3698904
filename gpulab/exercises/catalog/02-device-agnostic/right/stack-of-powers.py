# why: builds the columns one power at a time with Python ints and torch.stack, no exponent tensor
"""Columns x**0 .. x**degree stacked side by side; only the values are ever a tensor."""

import numpy as np
import torch


def pick_device() -> torch.device:
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def features(values: np.ndarray, degree: int, device=None):
    device = pick_device() if device is None else torch.device(device)
    x = torch.tensor(values, dtype=torch.float32, device=device)
    return torch.stack([x**k for k in range(degree + 1)], dim=1)
