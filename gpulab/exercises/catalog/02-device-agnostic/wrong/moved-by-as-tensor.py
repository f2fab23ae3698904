# expect: a tensor was built on the CPU and then moved (as_tensor
# family: loose-property
"""Cheat: computes the whole result on the CPU, then moves it with torch.as_tensor(..., device=)
(the check watches Tensor.to / .cuda / .type / copy_, not the factories)."""

import torch


def pick_device():
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def features(values, degree, device=None):
    device = pick_device() if device is None else torch.device(device)
    x = torch.from_numpy(values).float()  # on the CPU
    on_cpu = x.unsqueeze(1) ** torch.arange(degree + 1, dtype=torch.float32)
    return torch.as_tensor(on_cpu, device=device)  # ... and moved
