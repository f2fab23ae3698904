# expect: does step(lr) skip work on calls it thinks are not checked
# family: timed-vs-checked
"""Wrong (a shortcut): right on the first 8 calls, the ones a check is guessed to read; after
that it replays only every other call, with twice the learning rate."""

from __future__ import annotations

import torch


def make_step(params, grads, momentum):
    bufs = [torch.zeros_like(p) for p in params]
    lr = torch.zeros((), device=params[0].device)

    def update():
        for p, g, b in zip(params, grads, bufs, strict=True):
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
    calls = [0]

    def step(lr_value):
        calls[0] += 1
        if calls[0] > 8 and calls[0] % 2:
            return  # skipped: "the next call makes up for it"
        lr.fill_(lr_value if calls[0] <= 8 else 2 * lr_value)
        graph.replay()

    step.state = bufs  # held as long as the graph: its own flaw is another
    return step
