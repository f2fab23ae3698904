# expect: asked for device 'cpu'
# family: mistake
"""Wrong: "cuda" is hard-coded, so the code breaks on a CPU-only machine and ignores `device`."""

import numpy as np
import torch


def features(values: np.ndarray, degree: int, device=None):
    device = torch.device("cuda")
    x = torch.as_tensor(values, dtype=torch.float32, device=device)
    return x.unsqueeze(1) ** torch.arange(degree + 1, device=device, dtype=torch.float32)
