# expect: frozen into the graph
# family: mistake
"""Wrong: the learning rate is a Python number read by the captured kernels at capture time.
step(lr) changes the Python value, which no replay reads: every call steps with the lr the
capture saw."""

from __future__ import annotations

import torch


def make_step(params, grads, momentum):
    bufs = [torch.zeros_like(p) for p in params]
    lr = [0.0]  # changed by step(lr): but the graph holds the number it was captured with

    def update():
        for p, g, b in zip(params, grads, bufs, strict=True):
            b.mul_(momentum).add_(g)
            p.add_(b, alpha=-lr[0])

    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        update()  # lr 0: the parameters stay put
        for b in bufs:
            b.zero_()
    torch.cuda.current_stream().wait_stream(side)
    lr[0] = 0.01  # "a placeholder until the first call"
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        update()

    def step(lr_value):
        lr[0] = lr_value
        graph.replay()

    step.state = bufs  # held as long as the graph: its own flaw is another
    return step
