# expect: gradients `grads` held when make_step ran
# family: mistake
"""Wrong: the lesson's pattern copied without its reason: the gradients are cloned into static
tensors at make_step time and the graph captured on the clones, but nothing copies the new
gradients in, so every call steps with the first ones. `grads` is already static: the check
rewrites those very tensors before each call."""

from __future__ import annotations

import torch


def make_step(params, grads, momentum):
    static_grads = [g.clone() for g in grads]  # a copy: the graph will read these forever
    bufs = [torch.zeros_like(p) for p in params]
    lr = torch.zeros((), device=params[0].device)

    def update():
        for p, g, b in zip(params, static_grads, bufs, strict=True):
            b.mul_(momentum).add_(g)
            p.addcmul_(b, lr, value=-1.0)

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

    step.state = (static_grads, bufs)  # held as long as the graph: its own flaw is another
    return step
