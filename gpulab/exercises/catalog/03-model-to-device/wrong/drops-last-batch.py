# expect: outputs for
# family: mistake
"""Wrong: an off-by-one loop that skips the last batch."""

import torch


def predict(model, batches, device):
    model.to(device)
    with torch.no_grad():
        return [model(batches[i].to(device)) for i in range(len(batches) - 1)]
