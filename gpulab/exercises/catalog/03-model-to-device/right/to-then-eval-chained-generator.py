# why: model.to(device).eval() chained, no_grad as a decorator, batches moved with non_blocking in a list comprehension
import torch


@torch.no_grad()
def predict(model, batches, device):
    m = model.to(device).eval()
    return [m(b.to(device, non_blocking=True)) for b in batches]
