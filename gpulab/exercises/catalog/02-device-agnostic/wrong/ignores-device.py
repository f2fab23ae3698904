# expect: but the result is on
# family: mistake
"""Wrong: always uses the best device, even when the caller asked for another one."""

import numpy as np
import torch


def features(values: np.ndarray, degree: int, device=None):
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    x = torch.as_tensor(values, dtype=torch.float32, device=device)
    return x.unsqueeze(1) ** torch.arange(degree + 1, device=device, dtype=torch.float32)


def pick_device():
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")
