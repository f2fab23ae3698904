"""Exercise: move a model and its batches to the device.

Run the check once as it is and read the error: it is the same-device rule. Then fix `predict`.
"""

from __future__ import annotations

import torch


def predict(model: torch.nn.Module, batches: list[torch.Tensor], device) -> list[torch.Tensor]:
    """Run `model` on every batch on `device`; return the outputs, one per batch, on `device`."""
    model.to(device)
    outs = []
    for batch in batches:
        # TODO: this line raises "Expected all tensors to be on the same device" (or, on the
        #       meta device, "Tensor on device cpu is not on the expected device meta!").
        #       The batch is still where the data loader made it. Fix it, and run the loop
        #       without building an autograd graph.
        outs.append(model(batch))
    return outs
