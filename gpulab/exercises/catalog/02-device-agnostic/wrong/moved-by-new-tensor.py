# expect: a tensor was built on the CPU and then moved
# family: loose-property
"""Cheat: computes the whole result on the CPU, then moves it with new_tensor on an empty tensor
made on the device: new_tensor copies its argument onto self's device, like .to(device), and
the check's list of moves (to, cuda, type, copy_, the factories, assignment) does not name it."""

import torch


def pick_device():
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def features(values, degree, device=None):
    device = pick_device() if device is None else torch.device(device)
    x = torch.from_numpy(values).float()  # on the CPU
    on_cpu = x.unsqueeze(1) ** torch.arange(degree + 1, dtype=torch.float32)
    return torch.empty(0, device=device).new_tensor(on_cpu)
