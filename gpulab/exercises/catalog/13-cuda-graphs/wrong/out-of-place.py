# expect: did not change the parameters
# family: mistake
"""Wrong: the captured update writes each new parameter to a new tensor (p - lr * buf) and
rebinds its own list's entry; the tensors the caller holds never change."""

from __future__ import annotations

import torch


def make_step(params, grads, momentum):
    params = list(params)
    bufs = [torch.zeros_like(p) for p in params]
    lr = torch.zeros((), device=params[0].device)

    def update():
        for i, (g, b) in enumerate(zip(grads, bufs, strict=True)):
            b.mul_(momentum).add_(g)
            params[i] = params[i] - lr * b  # a new tensor from the graph's pool

    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        update()
        for b in bufs:
            b.zero_()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        update()

    def step(lr_value):
        lr.fill_(lr_value)
        graph.replay()

    step.state = (bufs, params)  # held as long as the graph: its own flaw is another
    return step
