"""Run a model over batches on a device: model and data on the same device, no graph kept."""

from __future__ import annotations

import torch


def predict(model: torch.nn.Module, batches: list[torch.Tensor], device) -> list[torch.Tensor]:
    model.to(device)  # in place for a Module: its parameters and buffers move
    model.eval()
    outs = []
    with torch.no_grad():  # inference: no autograd graph to keep alive
        for batch in batches:
            outs.append(model(batch.to(device, non_blocking=True)))
    return outs
