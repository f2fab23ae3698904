# expect: a tensor on the wrong device
# family: mistake
"""Wrong: moves the batches but leaves the model's weights on the CPU."""

import torch


def predict(model, batches, device):
    with torch.no_grad():
        return [model(batch.to(device)) for batch in batches]
