# expect: the model ran a forward pass on cpu
# family: loose-property
"""Cheat: runs the model on the CPU, where model and batches already are, and only then moves the
model and the outputs to the device: nothing is computed "on device"."""

import torch


def predict(model, batches, device):
    model.eval()
    with torch.no_grad():
        outs = [model(batch) for batch in batches]  # on the CPU
    model.to(device)
    return [out.to(device) for out in outs]
