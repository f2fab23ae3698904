# expect: requires grad | recorded an autograd graph
# family: mistake
"""Wrong: no torch.no_grad(), so every output drags an autograd graph along."""


def predict(model, batches, device):
    model.to(device).eval()
    return [model(batch.to(device)) for batch in batches]
