# expect: momentum buffers start from zero
# family: mistake
"""Wrong: the momentum buffers are made inside the captured function, so making them (a fill
with zeros) is part of the graph: every replay zeroes them again and the momentum is lost."""

from __future__ import annotations

import torch


def make_step(params, grads, momentum):
    lr = torch.zeros((), device=params[0].device)

    def update():
        bufs = [torch.zeros_like(p) for p in params]  # a new zero buffer at every replay
        for p, g, b in zip(params, grads, bufs, strict=True):
            b.mul_(momentum).add_(g)
            p.addcmul_(b, lr, value=-1.0)

    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        update()  # lr 0: the parameters stay put
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        update()

    def step(lr_value):
        lr.fill_(lr_value)
        graph.replay()

    return step
