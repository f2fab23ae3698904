# expect: an assignment from a CPU tensor
# family: loose-property
"""Cheat: computes the result on the CPU, then copies it into an empty tensor on the device by
slice assignment (Tensor.__setitem__, not copy_)."""

import torch


def pick_device():
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def features(values, degree, device=None):
    device = pick_device() if device is None else torch.device(device)
    x = torch.from_numpy(values).double()
    on_cpu = torch.stack([x**k for k in range(degree + 1)], dim=1).float()
    out = torch.empty(on_cpu.shape, dtype=torch.float32, device=device)
    out[...] = on_cpu
    return out
