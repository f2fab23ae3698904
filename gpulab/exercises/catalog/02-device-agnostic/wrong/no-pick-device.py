# expect: no pick_device()
# family: loose-property
"""Shortcut: pick_device() (half of the exercise) is missing altogether; the check only ever
calls features()."""

import torch


def features(values, degree, device=None):
    if device is None:
        device = "cuda" if torch.cuda.is_available() else "cpu"
    x = torch.as_tensor(values, dtype=torch.float32, device=device)
    return x.unsqueeze(1) ** torch.arange(degree + 1, device=device, dtype=torch.float32)
