# why: keeps every momentum buffer as a view of one flat tensor, and the learning rate and momentum both in GPU tensors
"""One allocation for all the buffers (views of a flat tensor), zeroed by one kernel after the
warm-up; lr and momentum as tensors, so one graph would serve a momentum schedule too."""

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

    # The graph keeps the addresses it was captured on, not the tensors: step holds what the
    # graph uses, or it goes back to the allocator when make_step returns and every replay
    # writes into whatever tensor is made there next.
    step.state = (flat, mom)

    return step
