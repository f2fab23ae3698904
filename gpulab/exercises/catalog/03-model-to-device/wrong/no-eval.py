# expect: model.eval()
# family: mistake
"""Wrong: never switches the model to eval mode, so dropout drops and batch norm uses the batch."""

import torch


def predict(model, batches, device):
    model.to(device)
    with torch.no_grad():
        return [model(batch.to(device)) for batch in batches]
