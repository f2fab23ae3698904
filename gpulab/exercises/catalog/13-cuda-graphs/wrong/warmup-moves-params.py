# expect: make_step changed the parameters
# family: mistake
"""Wrong: warms up three times as the lesson does, but on the real parameters with a real
learning rate: they have moved three steps before the first call."""

from __future__ import annotations

import torch


def make_step(params, grads, momentum):
    bufs = [torch.zeros_like(p) for p in params]
    lr = torch.full((), 0.01, device=params[0].device)

    def update():
        for p, g, b in zip(params, grads, bufs, strict=True):
            b.mul_(momentum).add_(g)
            p.addcmul_(b, lr, value=-1.0)

    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            update()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        update()

    def step(lr_value):
        lr.fill_(lr_value)
        graph.replay()

    step.state = bufs  # held as long as the graph: its own flaw is another
    return step
