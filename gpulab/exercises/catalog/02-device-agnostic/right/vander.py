# why: one library call, torch.vander(increasing=True), on a tensor created on the device
"""A Vandermonde matrix is exactly these features."""

import numpy as np
import torch


def pick_device() -> torch.device:
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def features(values: np.ndarray, degree: int, device=None):
    device = device if device is not None else pick_device()
    x = torch.as_tensor(values, device=device).float()  # float32 already: no copy, no move
    return torch.vander(x, N=degree + 1, increasing=True)
