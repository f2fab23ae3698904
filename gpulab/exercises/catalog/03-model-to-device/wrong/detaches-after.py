# expect: recorded an autograd graph
# family: loose-property
"""Shortcut: builds the whole autograd graph for every batch, then detaches the outputs, so
`requires_grad` is False without running under no_grad."""


def predict(model, batches, device):
    model.to(device).eval()
    return [model(batch.to(device)).detach() for batch in batches]
