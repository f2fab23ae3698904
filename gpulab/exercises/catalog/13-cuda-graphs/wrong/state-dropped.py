# expect: freed after the capture
# family: mistake
"""Wrong: the reference without one line. The momentum buffers are held only by update(), which
nothing holds once make_step returns: they go back to PyTorch's allocator, and every replay
writes into whatever tensor is made there next (our own first reference, caught on an H200)."""

from __future__ import annotations

import torch


def make_step(params: list[torch.Tensor], grads: list[torch.Tensor], momentum: float):
    """step(lr): one SGD-with-momentum step on every parameter, by one graph replay."""
    bufs = [torch.zeros_like(p) for p in params]  # made before the capture: they persist
    lr = torch.zeros((), device=params[0].device)  # the graph reads this tensor, not a number

    def update() -> None:
        for p, g, b in zip(params, grads, bufs, strict=True):
            b.mul_(momentum).add_(g)  # momentum never changes: a number is fine here
            p.addcmul_(b, lr, value=-1.0)  # p -= lr * b, with lr read on the GPU

    # Warm up on a side stream, as the lesson does; with lr = 0 the parameters stay put, and
    # the buffers the warm-up filled are zeroed again before the first real step.
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        update()
        for b in bufs:
            b.zero_()
    torch.cuda.current_stream().wait_stream(side)

    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        update()  # recorded, not run: the parameters are still as they were given

    def step(lr_value: float) -> None:
        lr.fill_(lr_value)  # this call's learning rate, where the captured kernels read it
        graph.replay()

    return step
