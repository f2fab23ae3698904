# expect: built on the CPU and then moved (Tensor.to
# family: mistake
"""Wrong: the values go straight to the device, but the exponents are made on the CPU and moved."""

import numpy as np
import torch


def features(values: np.ndarray, degree: int, device=None):
    if device is None:
        device = "cuda" if torch.cuda.is_available() else "cpu"
    x = torch.as_tensor(values, dtype=torch.float32, device=device)
    return x.unsqueeze(1) ** torch.arange(degree + 1).to(device=device, dtype=torch.float32)


def pick_device():
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")
