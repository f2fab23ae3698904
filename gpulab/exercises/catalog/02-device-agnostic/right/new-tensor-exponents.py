# why: makes the exponents with x.new_tensor(...), which lands on x's device and dtype by itself
"""x.new_tensor follows x: same device, same dtype, whatever the device was."""

import numpy as np
import torch


def pick_device() -> torch.device:
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def features(values: np.ndarray, degree: int, device=None):
    x = torch.as_tensor(values, dtype=torch.float32, device=device or pick_device())
    powers = x.new_tensor(list(range(degree + 1)))
    return x[:, None].pow(powers)
