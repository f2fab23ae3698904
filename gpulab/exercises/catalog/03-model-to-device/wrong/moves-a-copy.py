# expect: the model's parameter
# family: mistake
"""Wrong: moves a copy of the model, so the caller's model never reaches the device."""

import copy

import torch


def predict(model, batches, device):
    on_device = copy.deepcopy(model).to(device)
    on_device.eval()
    with torch.no_grad():
        return [on_device(batch.to(device)) for batch in batches]
