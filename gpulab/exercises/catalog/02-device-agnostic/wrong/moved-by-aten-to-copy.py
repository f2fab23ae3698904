# expect: a tensor was built on the CPU and then moved
# family: loose-property
"""Cheat: computes the whole result on the CPU, then moves it with the ATen operator under
Tensor.to, called directly (torch.ops.aten._to_copy): the watch matches the Python names of the
moves, and an OpOverload is none of them."""

import torch


def pick_device():
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def features(values, degree, device=None):
    device = pick_device() if device is None else torch.device(device)
    x = torch.from_numpy(values).float()  # on the CPU
    on_cpu = x.unsqueeze(1) ** torch.arange(degree + 1, dtype=torch.float32)
    return torch.ops.aten._to_copy(on_cpu, device=device)
