# expect: captured 8 graphs in 8 calls
# family: mistake
"""Wrong: captures a new graph on every call, with that call's learning rate as a number: right
values, but a capture costs more than the eager step it was meant to replace."""

from __future__ import annotations

import torch


def make_step(params, grads, momentum):
    bufs = [torch.zeros_like(p) for p in params]

    def step(lr_value):
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            for p, g, b in zip(params, grads, bufs, strict=True):
                b.mul_(momentum).add_(g)
                p.add_(b, alpha=-lr_value)
        graph.replay()

    return step
