# why: captures the foreach kernels (a few launches for all 64 tensors) instead of three per tensor, with lr multiplied in as a tensor
"""The update through torch._foreach_* inside the graph: fewer, larger kernels to replay. The
learning rate enters as a 0-dim tensor (`_foreach_mul` takes one), never as a number."""

from __future__ import annotations

import torch


def make_step(params, grads, momentum):
    bufs = [torch.zeros_like(p) for p in params]
    lr = torch.zeros((), device=params[0].device)

    def update():
        torch._foreach_mul_(bufs, momentum)
        torch._foreach_add_(bufs, grads)
        torch._foreach_sub_(params, torch._foreach_mul(bufs, lr))

    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        update()  # lr 0: the parameters stay put
        torch._foreach_zero_(bufs)
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
    step.state = bufs

    return step
