# why: the scale from x[0] and w[0] (select, not a slice), worked out eagerly as a 0-d tensor
"""Indexing picks one element as a 0-d view; its arithmetic is on one value, not a pass over x."""

import torch


@torch.compile
def scaled(x, w, scale):
    y = (x * w + 0.5) / scale
    return torch.tanh(y) * torch.sigmoid(y) + y * y


def run(x, w):
    scale = (x[0] * w[0] + 0.5).abs() + 1.0
    return scaled(x, w, scale)
