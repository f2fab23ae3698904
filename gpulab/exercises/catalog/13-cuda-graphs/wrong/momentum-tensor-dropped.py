# expect: freed after the capture
# family: mistake
"""Wrong: right/state-in-one-buffer.py holding its buffers but not the momentum tensor, which
only update() read. Freed when make_step returns, its 4 bytes go back to the allocator while
every replay still reads them: the momentum is whatever lands there next."""

from __future__ import annotations

import torch


def make_step(params, grads, momentum):
    dev = params[0].device
    flat = torch.zeros(sum(p.numel() for p in params), device=dev)
    bufs, at = [], 0
    for p in params:
        bufs.append(flat[at : at + p.numel()].view_as(p))
        at += p.numel()
    lr = torch.zeros((), device=dev)
    mom = torch.full((), momentum, device=dev)

    def update():
        for p, g, b in zip(params, grads, bufs, strict=True):
            b.mul_(mom).add_(g)
            p.sub_(b * lr)

    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        update()  # lr 0: the parameters stay put
        flat.zero_()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        update()

    def step(lr_value):
        lr.fill_(lr_value)
        graph.replay()

    step.state = flat  # mom is left to update(), which nothing holds

    return step
