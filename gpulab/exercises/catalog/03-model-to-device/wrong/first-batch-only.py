# expect: a tensor on the wrong device
# family: mistake
"""Wrong: moves the first batch and forgets the rest."""

import torch


def predict(model, batches, device):
    model.to(device)
    model.eval()
    outs = []
    with torch.no_grad():
        for i, batch in enumerate(batches):
            outs.append(model(batch.to(device) if i == 0 else batch))
    return outs
