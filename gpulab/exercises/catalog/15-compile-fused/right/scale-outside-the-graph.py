# why: the 1-element scale worked out eagerly and handed to the graph; the chain's passes over x are all compiled
"""The scale is a 1-element tensor computed before the compiled call; the graph does the rest."""

import torch


@torch.compile
def scaled(x, w, scale):
    y = (x * w + 0.5) / scale
    return torch.tanh(y) * torch.sigmoid(y) + y * y


def run(x, w):
    scale = (x[:1] * w[:1] + 0.5).abs() + 1.0
    return scaled(x, w, scale)
