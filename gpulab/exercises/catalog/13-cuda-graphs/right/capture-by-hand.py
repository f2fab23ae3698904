# why: capture_begin / capture_end on a stream of its own, warm-up on copies, and lr copied in (negated) from a pinned host tensor that an event guards
"""The steps torch.cuda.graph takes, by hand. The warm-up runs on scratch copies, so the real
parameters and buffers are never touched before the first call; the learning rate goes in as
-lr through a pinned host tensor and an asynchronous copy, which the next call waits for before
it writes that host tensor again."""

from __future__ import annotations

import torch


def make_step(params, grads, momentum):
    dev = params[0].device
    bufs = [torch.zeros_like(p) for p in params]
    neg_lr = torch.zeros(1, device=dev)
    host = torch.zeros(1, pin_memory=True)

    def update(ps, bs):
        for p, g, b in zip(ps, grads, bs, strict=True):
            b.mul_(momentum).add_(g)
            p.add_(b * neg_lr)

    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.stream(stream):
        update([p.clone() for p in params], [b.clone() for b in bufs])  # warm-up on copies
        stream.synchronize()
        graph.capture_begin()
        update(params, bufs)
        graph.capture_end()
    torch.cuda.current_stream().wait_stream(stream)

    copied = torch.cuda.Event()

    def step(lr_value):
        copied.synchronize()  # the last call's copy has read `host`: it may be written again
        host.fill_(-lr_value)
        neg_lr.copy_(host, non_blocking=True)
        copied.record()
        graph.replay()

    # The graph keeps the addresses it was captured on, not the tensors: step holds what the
    # graph uses, or it goes back to the allocator when make_step returns and every replay
    # writes into whatever tensor is made there next.
    step.state = bufs

    return step
