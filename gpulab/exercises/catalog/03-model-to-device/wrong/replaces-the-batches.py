# expect: in the list it was given
# family: mistake
"""Wrong: writes the device copies back into the caller's list, changing its input."""

import torch


def predict(model, batches, device):
    model.to(device).eval()
    for i, batch in enumerate(batches):
        batches[i] = batch.to(device)
    with torch.no_grad():
        return [model(batch) for batch in batches]
