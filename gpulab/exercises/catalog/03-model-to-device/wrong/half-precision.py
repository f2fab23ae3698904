# expect: keep the model in float32
# family: mistake
"""Wrong: halves the model to go faster, and casts the outputs back so they look float32."""

import torch


def predict(model, batches, device):
    model.to(device).half().eval()
    with torch.no_grad():
        return [model(batch.to(device).half()).float() for batch in batches]
