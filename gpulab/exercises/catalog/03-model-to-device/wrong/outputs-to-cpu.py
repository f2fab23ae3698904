# expect: back to the CPU
# family: mistake
"""Wrong: copies every output back to the CPU, which was not asked for (and costs a sync)."""

import torch


def predict(model, batches, device):
    model.to(device)
    model.eval()
    with torch.no_grad():
        return [model(batch.to(device)).cpu() for batch in batches]
