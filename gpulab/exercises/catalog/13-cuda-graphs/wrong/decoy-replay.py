# expect: outside the graph
# family: loose-property
"""Wrong (a shortcut): replays a graph on every call, a decoy that only fills a scalar, and does
the update eagerly beside it."""

from __future__ import annotations

import torch


def make_step(params, grads, momentum):
    bufs = [torch.zeros_like(p) for p in params]
    dummy = torch.zeros((), device=params[0].device)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        dummy.fill_(1.0)

    def step(lr_value):
        graph.replay()  # a graph was replayed...
        torch._foreach_mul_(bufs, momentum)  # ...and the work is done here, eagerly
        torch._foreach_add_(bufs, grads)
        torch._foreach_add_(params, bufs, alpha=-lr_value)

    step.state = dummy  # held as long as the graph: its own flaw is another
    return step
