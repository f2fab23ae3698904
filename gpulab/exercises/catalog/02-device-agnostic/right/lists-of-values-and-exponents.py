# why: both tensors come from Python lists on the device (the values' list and range's exponents), no NumPy array handed to torch
"""Correct: the values handed in go to the device as a list (one copy of the input, as
as_tensor(values) makes), the exponents from a range; the powers are taken on the device."""

import torch


def pick_device():
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def features(values, degree, device=None):
    device = pick_device() if device is None else torch.device(device)
    x = torch.tensor(values.tolist(), dtype=torch.float32, device=device)
    powers = torch.tensor(range(degree + 1), dtype=torch.float32, device=device)
    return x[:, None] ** powers
