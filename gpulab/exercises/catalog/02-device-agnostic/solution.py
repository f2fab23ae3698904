"""Polynomial features on any device: the same code on a laptop and on an H100."""

from __future__ import annotations

import numpy as np
import torch


def pick_device() -> torch.device:
    """The GPU when PyTorch can use one, else the CPU."""
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def features(values: np.ndarray, degree: int, device: str | torch.device | None = None):
    """Columns values**0 .. values**degree, float32, on `device` (or the best one)."""
    device = pick_device() if device is None else torch.device(device)
    # Created directly on the device: no CPU copy first, no device mismatch later.
    x = torch.as_tensor(values, dtype=torch.float32, device=device)
    powers = torch.arange(degree + 1, device=device, dtype=torch.float32)
    return x.unsqueeze(1) ** powers
