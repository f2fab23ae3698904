# why: uses model.train(False) and torch.inference_mode() instead of eval() and no_grad()
"""train(False) is eval(); inference_mode() is a stricter no_grad()."""

import torch


def predict(model, batches, device):
    model = model.to(device=device)  # Module.to returns the module itself
    model.train(False)
    with torch.inference_mode():
        return [model(batch.to(device, non_blocking=True)) for batch in batches]
