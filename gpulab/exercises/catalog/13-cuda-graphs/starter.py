"""Exercise: capture an optimizer step in a CUDA graph, with a learning rate that changes."""

from __future__ import annotations

import torch


def make_step(params: list[torch.Tensor], grads: list[torch.Tensor], momentum: float):
    """Return step(lr) that does one step of SGD with momentum on every parameter, in place:
    buf = momentum * buf + grad; param -= lr * buf (buf zero before the first step).

    TODO: this runs the update eagerly, three kernel launches per tensor on every call. Capture
    it once into a torch.cuda.CUDAGraph and make step(lr) replay it, with lr in a tensor the
    graph reads.
    """
    bufs = [torch.zeros_like(p) for p in params]

    def step(lr: float) -> None:
        for p, g, b in zip(params, grads, bufs, strict=True):
            b.mul_(momentum).add_(g)
            p.add_(b, alpha=-lr)

    return step
