# expect: the model ran a forward pass on cpu
# family: loose-property
"""Cheat: the forward pass runs on the CPU, where the model and the batches already are, and only
the outputs are moved to the device. Each layer is called through its .forward method, not the
module's __call__, so no forward hook fires: the check's hooks see no layer run anywhere, and an
empty record passes for a forward on the device."""

import torch


def predict(model, batches, device):
    model.eval()
    outs = []
    with torch.no_grad():
        for batch in batches:
            h = batch
            for layer in model:
                h = layer.forward(h)  # no hooks on this road
            outs.append(h.to(device))
    model.to(device)
    return outs
